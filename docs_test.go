package baton_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// The user docs: the README is the front door, each guide one topic that
// fits on a few screens.
const (
	readmeMaxLines       = 250
	guideMaxLines        = 300
	contributingMaxLines = 150
)

// guideLineExemptions are guides allowed past guideMaxLines, with the
// reason. Keep it empty: split a guide that grows instead.
var guideLineExemptions = map[string]string{}

// userDocs returns README.md and every docs/*.md, README first.
func userDocs(t *testing.T) []string {
	t.Helper()
	guides, err := filepath.Glob(filepath.Join("docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, guides)
	sort.Strings(guides)
	return append([]string{"README.md"}, guides...)
}

func TestDocsLength(t *testing.T) {
	t.Parallel()
	for _, doc := range userDocs(t) {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		lines := strings.Count(string(b), "\n")
		limit := guideMaxLines
		if doc == "README.md" {
			limit = readmeMaxLines
		} else if _, ok := guideLineExemptions[filepath.Base(doc)]; ok {
			continue
		}
		require.LessOrEqual(t, lines, limit, "%s has %d lines: at most %d (move a topic to its own page in docs/)", doc, lines, limit)
	}
	b, err := os.ReadFile("CONTRIBUTING.md")
	require.NoError(t, err)
	lines := strings.Count(string(b), "\n")
	require.LessOrEqual(t, lines, contributingMaxLines, "CONTRIBUTING.md has %d lines", lines)
}

// TestDocsRunbookSections: the runbook's sections are numbered 1, 2, 3, …
// in order, as the guides cite them.
func TestDocsRunbookSections(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("RUNBOOK.md")
	require.NoError(t, err)
	sections := regexp.MustCompile(`(?m)^## (\d+)\. `).FindAllStringSubmatch(string(b), -1)
	require.NotEmpty(t, sections)
	for i, m := range sections {
		require.Equal(t, fmt.Sprint(i+1), m[1], "RUNBOOK.md: section %d is numbered %s", i+1, m[1])
	}
}

// fence matches a fenced code block; inlineCode an inline code span.
var (
	fence      = regexp.MustCompile("(?ms)^[ \t]*```.*?^[ \t]*```[^\n]*$")
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	heading    = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$`)
	urlScheme  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// anchors returns the anchors GitHub gives a markdown file's headings.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(md, ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '_', r == '-':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// TestDocsLinks: every relative link of the user docs and the root
// documents names a file that exists and, into a markdown file, a heading
// it has.
func TestDocsLinks(t *testing.T) {
	t.Parallel()
	docs := userDocs(t)
	roots, err := filepath.Glob("*.md")
	require.NoError(t, err)
	for _, r := range roots {
		if r != "README.md" {
			docs = append(docs, r)
		}
	}
	checked := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		text := inlineCode.ReplaceAllString(fence.ReplaceAllString(string(b), ""), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			link := m[1]
			if urlScheme.MatchString(link) {
				continue
			}
			target, anchor, _ := strings.Cut(link, "#")
			path := doc
			if target != "" {
				path = filepath.Join(filepath.Dir(doc), filepath.FromSlash(target))
			}
			_, err := os.Stat(path)
			require.NoError(t, err, "%s: link %q: no such file", doc, link)
			checked++
			if anchor == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			md, err := os.ReadFile(path)
			require.NoError(t, err)
			require.True(t, anchors(string(md))[anchor], "%s: link %q: %s has no heading with the anchor #%s", doc, link, path, anchor)
		}
	}
	require.Greater(t, checked, 20, "the docs' links")
}

func TestDocsAnchors(t *testing.T) {
	t.Parallel()
	a := anchors("# Concepts and guarantees\n```\n# not a heading\n```\n## Guarantees, and their limits\n### 7 river (PostgreSQL)\n## `baton ui`: the dashboard\n## Twice\n## Twice\n")
	require.Equal(t, map[string]bool{
		"concepts-and-guarantees":     true,
		"guarantees-and-their-limits": true,
		"7-river-postgresql":          true,
		"baton-ui-the-dashboard":      true,
		"twice":                       true,
		"twice-1":                     true,
	}, a)
}

// goBlock is a ```go block of a user doc.
type goBlock struct {
	doc, file string // file: the path its <!-- file: PATH --> marker names, if any
	line      int
	src       string
}

var (
	goBlockRE = regexp.MustCompile("(?ms)^```go\n(.*?)^```[ \t]*$")
	wholeFile = regexp.MustCompile(`(?m)^package `)
)

// goBlocks returns every ```go block of the user docs.
func goBlocks(t *testing.T) []goBlock {
	t.Helper()
	var out []goBlock
	marker := regexp.MustCompile(`<!-- file: ([^ ]+) -->\n$`)
	for _, doc := range userDocs(t) {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		s := string(b)
		for _, m := range goBlockRE.FindAllStringSubmatchIndex(s, -1) {
			blk := goBlock{doc: doc, line: strings.Count(s[:m[0]], "\n") + 1, src: s[m[2]:m[3]]}
			if mm := marker.FindStringSubmatch(s[:m[0]]); mm != nil {
				blk.file = mm[1]
			}
			out = append(out, blk)
		}
	}
	return out
}

// moduleFiles returns the user module the README and the guides build, file
// by file: each ```go block preceded by <!-- file: PATH -->. A file shown
// on two pages must be the same on both.
func moduleFiles(t *testing.T) map[string]string {
	t.Helper()
	files, where := map[string]string{}, map[string]string{}
	for _, b := range goBlocks(t) {
		if b.file == "" {
			continue
		}
		if prev, ok := files[b.file]; ok {
			require.Equal(t, prev, b.src, "%s (%s:%d) differs from the same file in %s", b.file, b.doc, b.line, where[b.file])
			continue
		}
		files[b.file], where[b.file] = b.src, fmt.Sprintf("%s:%d", b.doc, b.line)
	}
	return files
}

// fragmentContexts are the declarations a fragment of a guide (a ```go
// block that is not a whole file) is compiled with, keyed by the guide and
// the fragment's first line. A fragment is compiled as an expression
// (var _ = ...), as declarations, or as statements in a function returning
// ([]byte, error), whichever it parses as, with the standard and baton
// packages it names imported. Prefer whole files with a file marker.
var fragmentContexts = map[string]string{
	"docs/flow-control.md: baton.Job{": `
func feedList(ctx context.Context, req baton.ItemsRequest) (baton.ItemsPage, error) { return baton.ItemsPage{}, nil }
func tenantOf(payload []byte) string { return string(payload) }
func fetch(ctx context.Context, url string) ([]byte, error) { return nil, nil }
var feeds []string
var fetcher baton.Processor
`,
	"docs/flow-control.md: if resp.StatusCode == http.StatusTooManyRequests {": `
var resp *http.Response
var url string
`,
	"docs/tracing.md: func main() {": `
var catalog *baton.Catalog
var tp = batonlambda.Options{}.TracerProvider
var mp = batonlambda.Options{}.MeterProvider
`,
	"docs/tracing.md: err := batonhttp.Serve(ctx, catalog, &batonhttp.ServeOptions{Options: batonhttp.Options{": `
var ctx = context.Background()
var catalog *baton.Catalog
var b *batonhttp.Backend
var tp = batonhttp.Options{}.TracerProvider
var mp = batonhttp.Options{}.MeterProvider
var logger *slog.Logger
`,
	"docs/locks.md: locker, err := batonlock.Open(ctx, &batonlock.Options{": `
var ctx = context.Background()
func trade(ctx context.Context, fence int64) {}
`,
}

// snippetImports are the packages a fragment may name without importing.
var snippetImports = map[string]string{
	"baton": "github.com/batonhq/baton", "batonclient": "github.com/batonhq/baton/batonclient",
	"batoncli": "github.com/batonhq/baton/batoncli", "batonhttp": "github.com/batonhq/baton/batonhttp",
	"batonlambda": "github.com/batonhq/baton/batonlambda", "batonlock": "github.com/batonhq/baton/batonlock",
	"batontest": "github.com/batonhq/baton/batontest",
	"context":   "context", "errors": "errors", "fmt": "fmt", "http": "net/http", "json": "encoding/json",
	"log": "log", "os": "os", "slog": "log/slog", "strconv": "strconv", "strings": "strings",
	"time": "time", "url": "net/url",
}

// wrapFragment turns a fragment into a file of package snippet.
func wrapFragment(t *testing.T, b goBlock, context string) string {
	t.Helper()
	var body string
	fset := token.NewFileSet()
	if _, err := parser.ParseExpr(b.src); err == nil {
		body = "var _ = " + b.src
	} else if _, err := parser.ParseFile(fset, "", "package snippet\n"+b.src, 0); err == nil {
		body = b.src
	} else {
		f, err := parser.ParseFile(fset, "", "package snippet\nfunc _() {\n"+b.src+"\n}", 0)
		require.NoError(t, err, "%s:%d: the fragment is neither an expression, declarations nor statements", b.doc, b.line)
		// Names the fragment declares and may not use again: used here.
		var used []string
		for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
			switch st := st.(type) {
			case *ast.AssignStmt:
				if st.Tok == token.DEFINE {
					for _, l := range st.Lhs {
						if id, ok := l.(*ast.Ident); ok && id.Name != "_" {
							used = append(used, "_ = "+id.Name)
						}
					}
				}
			case *ast.DeclStmt:
				for _, s := range st.Decl.(*ast.GenDecl).Specs {
					if vs, ok := s.(*ast.ValueSpec); ok {
						for _, id := range vs.Names {
							used = append(used, "_ = "+id.Name)
						}
					}
				}
			}
		}
		body = "func _() (_ []byte, _ error) {\n" + b.src + "\n" + strings.Join(used, "\n") + "\nreturn\n}"
	}
	src := "package snippet\n" + context + "\n" + body + "\n"
	f, err := parser.ParseFile(fset, "", src, 0)
	require.NoError(t, err, "%s:%d", b.doc, b.line)
	imports := map[string]bool{}
	for _, id := range f.Unresolved {
		if path, ok := snippetImports[id.Name]; ok {
			imports[path] = true
		}
	}
	var imp []string
	for path := range imports {
		imp = append(imp, fmt.Sprintf("import %q", path))
	}
	sort.Strings(imp)
	return "package snippet\n" + strings.Join(imp, "\n") + "\n" + context + "\n// " + fmt.Sprintf("%s:%d", b.doc, b.line) + "\n" + body + "\n"
}

// TestDocsSnippets compiles every ```go block of the README and docs/ that
// is not a file of the user module (TestReadmeModule builds and runs
// those): a whole file as it is, a fragment wrapped with its context.
func TestDocsSnippets(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module: not in -short")
	}
	t.Parallel()
	checkout, err := filepath.Abs(".")
	require.NoError(t, err)
	dir := t.TempDir()
	n := 0
	for i, b := range goBlocks(t) {
		if b.file != "" {
			continue
		}
		src := b.src
		if !wholeFile.MatchString(src) {
			first, _, _ := strings.Cut(strings.TrimSpace(src), "\n")
			src = wrapFragment(t, b, fragmentContexts[b.doc+": "+strings.TrimSpace(first)])
		}
		pkg := filepath.Join(dir, fmt.Sprintf("s%02d_%s", i, strings.TrimSuffix(filepath.Base(b.doc), ".md")))
		pkg = strings.ReplaceAll(pkg, "-", "_")
		require.NoError(t, os.MkdirAll(pkg, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(pkg, "snippet.go"), []byte(src), 0o644))
		n++
	}
	require.Positive(t, n, "the guides' fragments")
	sum, err := os.ReadFile("go.sum")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644))
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
	}
	run("go", "mod", "init", "example.com/docsnippets")
	run("go", "mod", "edit", "-go="+strings.TrimPrefix(runtime.Version(), "go"), "-require=github.com/batonhq/baton@v0.0.0", "-replace=github.com/batonhq/baton="+checkout)
	run("go", "mod", "tidy")
	run("go", "build", "./...")
}
