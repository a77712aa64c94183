package localaws

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A test of a nested module (the lab's: lab/go.mod) runs in a directory
// below two go.mod files: the emulators are those of baton's root, whose
// go.mod declares github.com/batonhq/baton, not the nearest go.mod's.
func TestModuleRootPassesOverANestedModule(t *testing.T) {
	root := t.TempDir()
	write := func(path, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	write(filepath.Join(root, "go.mod"), "// baton\nmodule \"github.com/batonhq/baton\"\n\ngo 1.26.0\n")
	write(filepath.Join(root, "lab", "go.mod"), "module github.com/batonhq/baton/lab\n\ngo 1.26.0\n")
	pkg := filepath.Join(root, "lab", "bench")
	require.NoError(t, os.MkdirAll(pkg, 0o755))

	t.Chdir(pkg)
	got, err := moduleRoot()
	require.NoError(t, err)
	require.Equal(t, root, got)

	// At baton's root itself, as `make bench` runs the bench binary.
	t.Chdir(root)
	got, err = moduleRoot()
	require.NoError(t, err)
	require.Equal(t, root, got)
}

// And in this repository: the module root holds the emulators' launcher.
func TestModuleRootHoldsTheLauncher(t *testing.T) {
	root, err := moduleRoot()
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(localDir(root), "start.js"))
	require.Equal(t, modulePath, declaredModule(filepath.Join(root, "go.mod")))
}
