package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/bars"
	"github.com/batonhq/baton/internal/bars/barstest"
)

func TestBarsConformance(t *testing.T) {
	t.Parallel()
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	barstest.Run(t, func(t *testing.T) bars.Store { return NewBarsStore(db) })
}
