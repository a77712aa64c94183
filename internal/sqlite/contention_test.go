package sqlite

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lease"
)

func TestContentionStore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "baton.db")
	db, err := Open(t.Context(), path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	// A second handle on the file, as a second process would have.
	db2, err := Open(t.Context(), path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { db2.Close() })
	ctx := t.Context()

	r, err := NewContentionStore(db).Contention(ctx, "fx")
	require.NoError(t, err)
	require.Zero(t, r.Count)

	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for i := range 10 {
		store := NewContentionStore([]*DB{db, db2}[i%2])
		wg.Go(func() {
			holder := lease.Lease{Job: "fx", Owner: "holder-" + string(rune('a'+i)), Fence: int64(i), ExpiresAt: at.Add(time.Minute)}
			require.NoError(t, store.RecordContention(ctx, "fx", holder, at.Add(time.Duration(i)*time.Second)))
		})
	}
	wg.Wait()
	r, err = NewContentionStore(db).Contention(ctx, "fx")
	require.NoError(t, err)
	require.EqualValues(t, 10, r.Count)
	require.True(t, r.Last.Equal(at.Add(9*time.Second)), "the latest refusal is kept whatever the write order")
	require.Equal(t, "holder-j", r.Holder.Owner)
	require.EqualValues(t, 9, r.Holder.Fence)

	other, err := NewContentionStore(db).Contention(ctx, "other")
	require.NoError(t, err)
	require.Zero(t, other.Count)
	require.Error(t, NewContentionStore(db).RecordContention(ctx, "", lease.Lease{}, at))
}
