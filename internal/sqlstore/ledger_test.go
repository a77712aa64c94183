package sqlstore

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
)

func TestScanRun(t *testing.T) {
	t.Parallel()
	n := Nanos(t0)
	vals := []any{"fx", n, 2, "fanned_out", 7, 9, int64(4), int64(3), 2,
		n + 1, n + 2, int64(0), 5, 1, 0, "digest", "trace"}
	require.Equal(t, len(vals), columns(RunColumns), "RunColumns and ScanRun agree")
	r, err := ScanRun(scanOf(vals...))
	require.NoError(t, err)
	require.Equal(t, ledger.RunIDOf("fx", t0, 2), r.ID)
	require.Equal(t, ledger.RunState("fanned_out"), r.State)
	require.Equal(t, Time(n+1), r.OpenedAt)
	require.Equal(t, Time(n+2), r.UpdatedAt)
	require.True(t, r.FinishedAt.IsZero())
	require.Equal(t, []any{7, 9, int64(4), int64(3), 2, 5, 1, 0, "digest", "trace"},
		[]any{r.Cursor, r.Total, r.Fence, r.OpenFence, r.Shards, r.Succeeded, r.Dead, r.Cancelled, r.Digest, r.TraceID})

	boom := errors.New("boom")
	_, err = ScanRun(func(...any) error { return boom })
	require.ErrorIs(t, err, boom)
}

func TestScanItem(t *testing.T) {
	t.Parallel()
	run := ledger.RunIDOf("fx", t0, 1)
	n := Nanos(t0)
	vals := []any{"EURUSD", "FAILED", "c1", 2, n + 1, int64(6), "upstream 503", []byte("r"),
		n, n + 2, int64(0), n + 3, n + 4, "lim", "key", 3}
	require.Equal(t, len(vals), columns(ItemColumns), "ItemColumns and ItemRow agree")
	it, err := ScanItem(scanOf(vals...), run)
	require.NoError(t, err)
	require.Equal(t, ledger.ItemKey{Run: run, Asset: "EURUSD"}, it.Key)
	require.Equal(t, ledger.ItemState("FAILED"), it.State)
	require.Equal(t, Time(n+1), it.LeaseUntil)
	require.Equal(t, t0, it.CreatedAt)
	require.Equal(t, Time(n+2), it.StartedAt)
	require.True(t, it.FinishedAt.IsZero())
	require.Equal(t, Time(n+3), it.UpdatedAt)
	require.Equal(t, ledger.ItemWait{At: Time(n + 4), Limit: "lim", Key: "key", Attempt: 3}, it.Wait)
	require.Equal(t, "upstream 503", it.Error)

	// A scan of more columns than ItemColumns reads the item's through Dest.
	var r ItemRow
	var extra string
	require.NoError(t, scanOf(append([]any{"extra"}, vals...)...)(append([]any{&extra}, r.Dest()...)...))
	require.Equal(t, "EURUSD", r.Asset())
	require.Equal(t, it, r.Item(run))
}

func TestScanMark(t *testing.T) {
	t.Parallel()
	run := ledger.RunIDOf("fx", t0, 1)
	require.Equal(t, 6, columns(MarkColumns))
	m, err := ScanMark(scanOf(1, 2, 3, 4, 5, Nanos(t0)), run)
	require.NoError(t, err)
	require.Equal(t, ledger.Mark{Run: run, Level: 1, Index: 2, Succeeded: 3, Dead: 4, Cancelled: 5, At: t0}, m)
}

func TestMarkDone(t *testing.T) {
	t.Parallel()
	run := ledger.RunIDOf("fx", t0, 1)
	p := ledger.MarkParams{Run: run, Level: 1, Index: 2, Succeeded: 3, Now: t0}
	mine := ledger.Mark{Run: run, Level: 1, Index: 2, Succeeded: 3, At: t0}
	other := mine
	other.Succeeded = 2
	later := mine
	later.At = t0.Add(time.Second)
	for _, tc := range []struct {
		name     string
		w        MarkWrite
		terminal bool
	}{
		{"written", MarkWrite{Mark: mine}, false},
		{"written already", MarkWrite{Mark: mine, Existed: true}, true},
		{"a re-send finds its own", MarkWrite{Mark: mine, Existed: true, Unsure: true}, false},
		{"a re-send finds other counts", MarkWrite{Mark: other, Existed: true, Unsure: true}, true},
		{"a re-send finds another Now", MarkWrite{Mark: later, Existed: true, Unsure: true}, true},
	} {
		m, err := MarkDone(p, func() (MarkWrite, error) { return tc.w, nil })
		require.Equal(t, tc.w.Mark, m, tc.name)
		if tc.terminal {
			require.ErrorIs(t, err, ledger.ErrTerminal, tc.name)
			require.ErrorContains(t, err, "written already")
		} else {
			require.NoError(t, err, tc.name)
		}
	}

	boom := errors.New("boom")
	_, err := MarkDone(p, func() (MarkWrite, error) { return MarkWrite{}, boom })
	require.ErrorIs(t, err, boom)

	for _, bad := range []ledger.MarkParams{{Run: run, Level: -1}, {Run: run, Index: -1}, {Run: run, Succeeded: -1}, {Run: run, Dead: -1}, {Run: run, Cancelled: -1}} {
		_, err := MarkDone(bad, func() (MarkWrite, error) { panic("an invalid mark is not written") })
		require.ErrorContains(t, err, "is negative")
	}
}

func TestListBounds(t *testing.T) {
	t.Parallel()
	require.Equal(t, DefaultListLimit, ListLimit(0))
	require.Equal(t, DefaultListLimit, ListLimit(-3))
	require.Equal(t, 7, ListLimit(7))
	require.Equal(t, int64(1<<63-1), RunsBefore(time.Time{}))
	require.Equal(t, Nanos(t0), RunsBefore(t0))
}
