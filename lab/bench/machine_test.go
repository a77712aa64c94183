package bench

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The bench builds the functions in baton's module and the minimal
// handler in the lab's, whether it runs in lab/bench (go test) or at
// baton's root (make bench runs bin/bench.test there).
func TestModuleRoots(t *testing.T) {
	baton, lab, err := ModuleRoots()
	require.NoError(t, err)
	check := func(baton, lab string) {
		t.Helper()
		require.FileExists(t, filepath.Join(baton, "functions", "consumer", "main.go"))
		require.FileExists(t, filepath.Join(lab, filepath.FromSlash(minimalPkg), "main.go"))
		require.Equal(t, batonModule, declaredModule(filepath.Join(baton, "go.mod")))
		require.Equal(t, labModule, declaredModule(filepath.Join(lab, "go.mod")))
	}
	check(baton, lab)
	for _, dir := range []string{filepath.Join(lab, "bench"), baton} {
		t.Chdir(dir)
		b, l, err := ModuleRoots()
		require.NoError(t, err, "from %s", dir)
		require.Equal(t, baton, b, "from %s", dir)
		require.Equal(t, lab, l, "from %s", dir)
	}

	// Outside both modules there is nothing to build in.
	t.Chdir(t.TempDir())
	_, _, err = ModuleRoots()
	require.ErrorContains(t, err, "no go.mod of github.com/batonhq/baton")
}
