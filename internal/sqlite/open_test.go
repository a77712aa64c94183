package sqlite_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/sqlite"
)

// Paths with the characters a SQLite URI gives a meaning to open the file
// they name.
func TestOpenEscapesPath(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"a#b.db", "a?b.db", "a%41b.db", "a b.db"} {
		dir := t.TempDir()
		path := filepath.Join(dir, name)
		db, err := sqlite.Open(t.Context(), path, nil)
		require.NoError(t, err, name)
		require.NoError(t, db.Close())
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		require.Contains(t, names, name, "the store is the file named, not a prefix of it")
	}
}

// A read-only open creates nothing, refuses writes, and says when there
// is no store.
func TestOpenReadOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "sub", "missing.db")
	_, err := sqlite.Open(t.Context(), missing, &sqlite.Options{ReadOnly: true})
	require.True(t, errors.Is(err, sqlite.ErrNoStore), "%v", err)
	_, statErr := os.Stat(filepath.Dir(missing))
	require.True(t, os.IsNotExist(statErr), "nothing created")

	path := filepath.Join(dir, "baton.db")
	db, err := sqlite.Open(t.Context(), path, nil)
	require.NoError(t, err)
	_, err = sqlite.OpenQueue(t.Context(), db, "work", nil)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	require.NoError(t, os.Chmod(path, 0o444))
	ro, err := sqlite.Open(t.Context(), path, &sqlite.Options{ReadOnly: true})
	require.NoError(t, err, "a read-only file opens read-only")
	defer ro.Close()
	_, err = sqlite.OpenQueue(t.Context(), ro, "work", nil)
	require.NoError(t, err, "an existing queue opens without a write")
	_, err = sqlite.OpenQueue(t.Context(), ro, "other", nil)
	require.Error(t, err, "a read-only open creates no queue")
	_, err = ro.SQL().ExecContext(t.Context(), `CREATE TABLE x (a INTEGER)`)
	require.Error(t, err, "writes fail")
}

// A file that is not a store, or a damaged one, is refused at open.
func TestOpenDetectsCorruption(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	junk := make([]byte, 1<<20)
	for i := range junk {
		junk[i] = byte(i * 7)
	}
	require.NoError(t, os.WriteFile(garbage, junk, 0o644))
	_, err := sqlite.Open(t.Context(), garbage, nil)
	require.True(t, errors.Is(err, sqlite.ErrCorrupt), "%v", err)
	_, err = sqlite.Open(t.Context(), garbage, &sqlite.Options{ReadOnly: true})
	require.True(t, errors.Is(err, sqlite.ErrCorrupt), "%v", err)

	// A real store whose pages past the header are overwritten.
	path := filepath.Join(dir, "damaged.db")
	db, err := sqlite.Open(t.Context(), path, nil)
	require.NoError(t, err)
	_, err = db.SQL().ExecContext(t.Context(), `PRAGMA wal_checkpoint(TRUNCATE)`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	st, err := f.Stat()
	require.NoError(t, err)
	require.Greater(t, st.Size(), int64(8192))
	_, err = f.WriteAt(junk[:min(st.Size()-4096, int64(len(junk)))], 4096)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = sqlite.Open(t.Context(), path, nil)
	require.True(t, errors.Is(err, sqlite.ErrCorrupt), "%v", err)
}
