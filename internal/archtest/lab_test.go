package archtest

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// labOnly are the modules only the lab (lab/, a module of its own: the
// bench, the throttling proxy, the call counts) may need: the lab module
// itself, and River, which the bench compares baton with. Baton's go.mod
// requires none of them, so that a user of baton downloads none.
var labOnly = []string{
	"github.com/batonhq/baton/lab",
	"github.com/riverqueue/river",
}

// lab reports whether a module or package path is, or is under, one of
// labOnly's.
func lab(path string) bool {
	for _, p := range labOnly {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// TestMainModuleNeedsNoLab: baton's go.mod requires no lab-only module,
// and no package of baton's module, its tests included, imports the lab.
// The lab imports baton (lab/go.mod replaces it with ../), never the
// other way round.
func TestMainModuleNeedsNoLab(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	reqs := requires(t, root, "go.mod")
	require.Contains(t, reqs, "github.com/aws/aws-sdk-go-v2", "the requirement listing of go.mod looks incomplete")
	var bad []string
	for _, r := range reqs {
		if lab(r) {
			bad = append(bad, r)
		}
	}
	require.Empty(t, bad, "baton's go.mod requires these modules only the lab needs: move what needs them into lab/")

	imports := listAllImports(t, root)
	require.Contains(t, imports["github.com/batonhq/baton/internal/archtest"], "github.com/stretchr/testify/require", "the import listing looks incomplete (tests' imports missing)")
	require.Contains(t, imports, "github.com/batonhq/baton", "the import listing looks incomplete")
	bad = nil
	for pkg, imps := range imports {
		require.False(t, lab(pkg), "%s is listed as a package of baton's module", pkg)
		for _, imp := range imps {
			if lab(imp) {
				bad = append(bad, pkg+" imports "+imp)
			}
		}
	}
	require.Empty(t, bad, "baton's module must not import the lab module")

	// The check can fail: the lab's go.mod requires River.
	labReqs := requires(t, root, filepath.Join("lab", "go.mod"))
	require.Contains(t, labReqs, "github.com/riverqueue/river")
	require.Contains(t, labReqs, "github.com/batonhq/baton")
	require.True(t, lab("github.com/riverqueue/river/riverdriver/riverpgxv5"))
	require.True(t, lab("github.com/batonhq/baton/lab/bench/awscall"))
	require.False(t, lab("github.com/batonhq/baton/labels"))
	require.False(t, lab("github.com/batonhq/baton/internal/localaws"))
}

// requires lists the module paths a go.mod file requires, indirect ones
// included.
func requires(t *testing.T, root, gomod string) []string {
	t.Helper()
	cmd := exec.Command(goTool(t), "mod", "edit", "-json", gomod)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go mod edit -json %s: %s", gomod, stderr.String())
	var f struct{ Require []struct{ Path string } }
	require.NoError(t, json.Unmarshal(out, &f))
	paths := make([]string, 0, len(f.Require))
	for _, r := range f.Require {
		paths = append(paths, r.Path)
	}
	return paths
}

// listAllImports maps every package of the module to its imports, its
// tests' included; packages with errors are listed too (-e), so that an
// import the module cannot resolve still shows.
func listAllImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	cmd := exec.Command(goTool(t), "list", "-e", "-f",
		`{{.ImportPath}}{{range .Imports}} {{.}}{{end}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}`, "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list ./...: %s", stderr.String())
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		m[f[0]] = f[1:]
	}
	return m
}
