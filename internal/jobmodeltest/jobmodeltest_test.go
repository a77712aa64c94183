package jobmodeltest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/suitecheck"
)

// Every case the package defines (a func TestXxx(t *testing.T, h
// Harness) in its files) is listed by Groups, in one group only, under a
// name unique in the suite: a case written but not listed would never
// run on any engine.
func TestGroupsListEveryCaseOnce(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var defined []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") && takesHarness(fn) {
				defined = append(defined, fn.Name.Name)
			}
		}
	}
	require.NotEmpty(t, defined, "the parse found no case: the check would pass anything")

	var listed, names, groups []string
	for _, g := range Groups() {
		require.NotEmpty(t, g.Cases, "group %s", g.Name)
		groups = append(groups, g.Name)
		for _, c := range g.Cases {
			require.NotNil(t, c.Func, "case %s/%s", g.Name, c.Name)
			fn := runtime.FuncForPC(reflect.ValueOf(c.Func).Pointer()).Name()
			listed = append(listed, fn[strings.LastIndex(fn, ".")+1:])
			names = append(names, c.Name)
		}
	}
	slices.Sort(defined)
	sorted := slices.Sorted(slices.Values(listed))
	require.Equal(t, defined, sorted, "the cases defined and the cases Groups lists")
	require.Len(t, slices.Compact(sorted), len(listed), "a case listed twice")
	require.Len(t, slices.Compact(slices.Sorted(slices.Values(names))), len(names), "two cases of one name")
	require.Len(t, slices.Compact(slices.Sorted(slices.Values(groups))), len(groups), "two groups of one name")
	require.Len(t, Cases(), len(listed))
	t.Logf("%d cases in %d groups", len(listed), len(groups))
}

// takesHarness reports whether fn's parameters are (*testing.T, Harness).
func takesHarness(fn *ast.FuncDecl) bool {
	var types []string
	for _, p := range fn.Type.Params.List {
		for range max(1, len(p.Names)) {
			switch x := p.Type.(type) {
			case *ast.Ident:
				types = append(types, x.Name)
			case *ast.StarExpr:
				if sel, ok := x.X.(*ast.SelectorExpr); ok {
					types = append(types, "*"+sel.Sel.Name)
				}
			}
		}
	}
	return slices.Equal(types, []string{"*T", "Harness"})
}

// RunGroup finds every group by its name, and says which exist when
// asked for one that does not.
func TestGroupNamed(t *testing.T) {
	t.Parallel()
	for _, g := range Groups() {
		got, err := groupNamed(g.Name)
		require.NoError(t, err)
		require.Equal(t, g.Name, got.Name)
	}
	_, err := groupNamed("Heartbeat")
	require.ErrorContains(t, err, `no group "Heartbeat"`)
	require.ErrorContains(t, err, "Heartbeats")
}

// The suite fails a harness that declares what its engine does not do:
// the embedded store's classes share one pool, so a harness saying they
// do not is caught by PriorityPool (see internal/suitecheck).
func TestSuiteFindsBrokenHarnesses(t *testing.T) {
	t.Parallel()
	suitecheck.RequireCaught(t, "TestBrokenHarness", map[string][]string{
		"pool not declared": {"PriorityPool"},
	})
}

// TestBrokenHarness runs the Priorities group on the embedded store
// through the broken harness suitecheck.Broken names; only
// TestSuiteFindsBrokenHarnesses runs it.
func TestBrokenHarness(t *testing.T) {
	name := suitecheck.Broken(t)
	h := Harness{
		Engine: "sqlite",
		OpenFunc: func(t *testing.T, _ ...string) backend.Backend {
			b, err := sqlitebackend.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"))
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, b.Close()) })
			return b
		},
		Caps: Capabilities{PriorityPool: true},
	}
	switch name {
	case "pool not declared":
		h.Caps.PriorityPool = false
	default:
		t.Fatalf("no broken harness %q", name)
	}
	RunGroup(t, h, Priorities)
}
