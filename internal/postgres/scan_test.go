package postgres

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// Rows scanned into the same destinations through scanInPlace read
// every value as a plain scan would, the other columns untouched; a
// value the destination holds already is kept, not copied again; NULL is
// refused, as a scan into a string refuses it.
func TestScanInPlace(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	rows, err := db.pool.Query(t.Context(), `SELECT v, i FROM (VALUES (1, 'run'), (2, 'run'), (3, ''), (4, 'other'), (5, 'run')) AS t(i, v) ORDER BY i`)
	require.NoError(t, err)
	var v string
	var i int64
	dest := scanInPlace([]any{&v, &i})
	var got []string
	var data []*byte
	for rows.Next() {
		require.NoError(t, rows.Scan(dest...))
		got, data = append(got, v), append(data, unsafe.StringData(v))
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"run", "run", "", "other", "run"}, got)
	require.Equal(t, int64(5), i)
	require.Same(t, data[0], data[1], "the second row's repeated value is the first one's string")
	require.NotSame(t, data[1], data[4], "a value read again after others is a copy of its own")

	err = db.pool.QueryRow(t.Context(), `SELECT NULL::text`).Scan(scanInPlace([]any{&v})...)
	require.ErrorContains(t, err, "cannot scan NULL")
}
