package baton_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// goDocMaxLines bounds `go doc -all` of this package: the vocabulary a user
// reads as a guide, each identifier in a line or two, the details in
// docs/reference.md. Helpers only the runtime calls live in
// internal/jobspec, not here.
const goDocMaxLines = 399

// fieldDocMaxLines bounds a struct field's doc comment.
const fieldDocMaxLines = 6

func TestGoDocLength(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "doc", "-all", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	lines := strings.Count(string(out), "\n")
	require.LessOrEqual(t, lines, goDocMaxLines, "go doc -all has %d lines: move detail to docs/reference.md", lines)
}

// rootDoc returns the documentation of this package, from its files.
func rootDoc(t *testing.T) (*doc.Package, *token.FileSet) {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		require.NoError(t, err)
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/batonhq/baton")
	require.NoError(t, err)
	return p, fset
}

// TestDocCommentsSayWhat: every exported identifier's comment starts with
// its name, and no struct field's comment runs past fieldDocMaxLines.
func TestDocCommentsSayWhat(t *testing.T) {
	t.Parallel()
	p, _ := rootDoc(t)
	starts := func(what, name, text string) {
		t.Helper()
		short := name[strings.LastIndex(name, ".")+1:]
		require.True(t, strings.HasPrefix(text, short+" "), "%s %s: its comment starts with %q, not with what it is (%q)", what, name, firstLine(text), short)
	}
	for _, f := range p.Funcs {
		starts("func", f.Name, f.Doc)
	}
	for _, v := range append(append([]*doc.Value(nil), p.Consts...), p.Vars...) {
		if len(v.Names) == 1 {
			starts("value", v.Names[0], v.Doc)
		} else {
			require.NotEmpty(t, v.Doc, "the group %v", v.Names)
		}
	}
	for _, ty := range p.Types {
		starts("type", ty.Name, ty.Doc)
		for _, f := range append(append([]*doc.Func(nil), ty.Funcs...), ty.Methods...) {
			starts("func", ty.Name+"."+f.Name, f.Doc)
		}
		for _, spec := range ty.Decl.Specs {
			st, ok := spec.(*ast.TypeSpec).Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, field := range st.Fields.List {
				if field.Doc == nil {
					continue
				}
				n := len(field.Doc.List)
				require.LessOrEqual(t, n, fieldDocMaxLines, "%s.%s: a field's comment of %d lines: say what it is, move the rest to docs/reference.md", ty.Name, field.Names, n)
			}
		}
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// TestPackageDocListsPublicPackages: the package doc names every public
// library package of the module.
func TestPackageDocListsPublicPackages(t *testing.T) {
	t.Parallel()
	p, _ := rootDoc(t)
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Name}} {{len .GoFiles}}", "./...").CombinedOutput()
	require.NoError(t, err, "%s", out)
	listed := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		path, name, files := fields[0], fields[1], fields[2]
		rel := strings.TrimPrefix(path, "github.com/batonhq/baton/")
		if rel == path || strings.HasPrefix(rel, "internal/") || name == "main" || files == "0" {
			continue
		}
		require.Contains(t, p.Doc, rel, "the package doc names the public package %s", path)
		listed++
	}
	require.GreaterOrEqual(t, listed, 7)
}
