package bench

import (
	"os"
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
	wd, err := os.Getwd()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(lab, "bench"), wd)

	t.Chdir(baton)
	b2, l2, err := ModuleRoots()
	require.NoError(t, err)
	require.Equal(t, baton, b2)
	require.Equal(t, lab, l2)
	check(b2, l2)

	// Outside both modules there is nothing to build in.
	t.Chdir(t.TempDir())
	_, _, err = ModuleRoots()
	require.ErrorContains(t, err, "no go.mod of github.com/batonhq/baton")
}
