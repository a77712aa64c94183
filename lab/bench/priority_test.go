package bench

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The priority scenario at a small size (large enough that its first 10 %
// of completions, 400, is a fair sample under load): its figures are there and meet
// their goals. It runs alone, not beside the package's other tests: its
// figures are shares of the pool, which starved processors would distort.
func TestPrioritySmall(t *testing.T) {
	rows, err := Priority(t.Context(), t.TempDir(), 3000, 1000)
	require.NoError(t, err)
	require.Len(t, rows, 2)
	for _, r := range rows {
		t.Logf("%s: %.3f (reference %.3f) %s", r.Figure, r.Value, r.Reference, r.Note)
		require.True(t, r.Met(), "%+v", r)
	}
}
