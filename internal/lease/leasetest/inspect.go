package leasetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lease"
)

// TestInspectAbsent: a job never acquired has no record: Inspect returns
// ErrNotFound (never a zero record and a nil error).
func TestInspectAbsent(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	got, err := f.store.Inspect(f.ctx, f.job)
	require.ErrorIs(t, err, lease.ErrNotFound, "got %+v", got)
}
