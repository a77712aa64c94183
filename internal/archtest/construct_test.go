package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/batonhq/baton"

// builtTypes are the core's types that one package alone builds (the
// runtime, internal/exec: exec.Build and exec.Core), by import path, so
// that every entry point (the local runtime, Lambda, HTTP, the CLI) runs
// the same coordinator and consumers: same router, same chain starter,
// same caches.
var builtTypes = map[string][]string{
	module + "/internal/coordinator": {"Coordinator"},
	module + "/internal/consumer":    {"Consumer"},
}

// builders are the package directories allowed to build them. The
// benchmarks (lab/bench, in the lab module) build a bare consumer to
// measure its calls.
var builders = []string{"internal/exec", "lab/bench"}

// construction is one place a file builds a core type: a composite
// literal of it, or new(T).
type construction struct {
	pos  token.Position
	what string
}

// constructions lists where the non-test Go file src (of the package
// whose import path is pkg) builds a type of builtTypes.
func constructions(fset *token.FileSet, filename string, src any, pkg string) ([]construction, error) {
	f, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	// qualified: local import name → the import's core types; local: the
	// core types named unqualified (the defining package, dot imports).
	qualified := map[string]map[string]string{}
	local := map[string]string{}
	for _, name := range builtTypes[pkg] {
		local[name] = pkg + "." + name
	}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		names := builtTypes[p]
		if len(names) == 0 {
			continue
		}
		as := path.Base(p)
		if imp.Name != nil {
			as = imp.Name.Name
		}
		for _, n := range names {
			if as == "." {
				local[n] = p + "." + n
				continue
			}
			if qualified[as] == nil {
				qualified[as] = map[string]string{}
			}
			qualified[as][n] = p + "." + n
		}
	}
	typeOf := func(e ast.Expr) string {
		switch t := e.(type) {
		case *ast.Ident:
			return local[t.Name]
		case *ast.SelectorExpr:
			if x, ok := t.X.(*ast.Ident); ok {
				return qualified[x.Name][t.Sel.Name]
			}
		}
		return ""
	}
	var out []construction
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if n.Type == nil {
				return true
			}
			if what := typeOf(n.Type); what != "" {
				out = append(out, construction{pos: fset.Position(n.Pos()), what: what + "{…}"})
			}
			// A slice, array or map of them whose elements' literals
			// elide the type.
			var elem ast.Expr
			switch t := n.Type.(type) {
			case *ast.ArrayType:
				elem = t.Elt
			case *ast.MapType:
				elem = t.Value
			}
			if s, ok := elem.(*ast.StarExpr); ok {
				elem = s.X
			}
			if elem != nil && len(n.Elts) > 0 {
				if what := typeOf(elem); what != "" {
					out = append(out, construction{pos: fset.Position(n.Pos()), what: "elements of " + what})
				}
			}
		case *ast.CallExpr:
			if fn, ok := n.Fun.(*ast.Ident); ok && fn.Name == "new" && len(n.Args) == 1 {
				if what := typeOf(n.Args[0]); what != "" {
					out = append(out, construction{pos: fset.Position(n.Pos()), what: "new(" + what + ")"})
				}
			}
		}
		return true
	})
	return out, nil
}

// moduleConstructions lists the constructions of every non-test Go file
// under root, by package directory (slash-separated, relative to root):
// the module's and its nested modules' (lab/: their paths are under the
// module's, so they may import its internal packages). testdata, hidden
// and underscore directories hold no package.
func moduleConstructions(t *testing.T, root string) map[string][]construction {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string][]construction{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			base := d.Name()
			if rel != "." && (strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") || base == "testdata" || base == "node_modules" || base == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		dir := path.Dir(rel)
		pkg := module
		if dir != "." {
			pkg += "/" + dir
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		cs, err := constructions(fset, rel, src, pkg)
		if err != nil {
			return err
		}
		if len(cs) > 0 {
			out[dir] = append(out[dir], cs...)
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// Only internal/exec builds coordinators and consumers: Lambda (package
// lambdaapp), HTTP (httpapp), the CLI and the others ask it (exec.Build,
// exec.Core), so that no entry point wires the core its own way.
func TestOnlyTheRuntimeBuildsTheCore(t *testing.T) {
	t.Parallel()
	found := moduleConstructions(t, moduleRoot(t))
	// The scan sees a construction where there is one: the runtime's own.
	require.NotEmpty(t, found["internal/exec"], "the scan finds no construction in internal/exec, which has some: it looks blind")
	var bad []string
	for dir, cs := range found {
		allowed := false
		for _, b := range builders {
			allowed = allowed || dir == b || strings.HasPrefix(dir, b+"/")
		}
		if allowed {
			continue
		}
		for _, c := range cs {
			bad = append(bad, c.pos.String()+": "+c.what)
		}
	}
	require.Empty(t, bad, "only internal/exec builds coordinators and consumers (exec.Build, then Core.Coordinator, Core.Consumer, Core.Chains)")
}

// The check itself can fail: it sees each way a file builds a core type.
func TestConstructionsSeesEachForm(t *testing.T) {
	t.Parallel()
	src := `package lambdaapp

import (
	co "github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/consumer"
	. "github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/lease"
)

type handler struct{ core co.Coordinator }

var (
	a = handler{core: co.Coordinator{}}
	b = &consumer.Consumer{Owner: "x"}
	c = new(consumer.Consumer)
	d = Coordinator{}
	e = []consumer.Consumer{{}} // the element literal's type is elided
	h = map[string]*co.Coordinator{"a": {}}
	i = []consumer.Consumer{} // empty: builds none
	f = lease.Lease{}
	g = consumer.RunCache{}
)
`
	cs, err := constructions(token.NewFileSet(), "x.go", src, module+"/internal/lambdaapp")
	require.NoError(t, err)
	var whats []string
	for _, c := range cs {
		whats = append(whats, c.what)
	}
	require.Equal(t, []string{
		module + "/internal/coordinator.Coordinator{…}",
		module + "/internal/consumer.Consumer{…}",
		"new(" + module + "/internal/consumer.Consumer)",
		module + "/internal/coordinator.Coordinator{…}",
		"elements of " + module + "/internal/consumer.Consumer",
		"elements of " + module + "/internal/coordinator.Coordinator",
	}, whats)

	// In the defining package, the unqualified name is the type.
	cs, err = constructions(token.NewFileSet(), "y.go", "package coordinator\n\ntype Coordinator struct{}\n\nvar c = &Coordinator{}\n", module+"/internal/coordinator")
	require.NoError(t, err)
	require.Len(t, cs, 1)
}
