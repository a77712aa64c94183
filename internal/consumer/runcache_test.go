package consumer

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
)

// The run cache's key of a run id is its tick as jobspec.TickKey names
// it: two run ids share an entry exactly when their tick keys are equal
// (any generation; a submission whatever its nominal time; a tick at the
// nominal second, whatever its zone and its fraction of a second).
func TestTickOfAsTickKey(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	paris := time.FixedZone("CET", 3600)
	ids := []ledger.RunID{
		{Job: "fx", Nominal: at, Generation: 1},
		{Job: "fx", Nominal: at, Generation: 2},
		{Job: "fx", Nominal: at.In(paris), Generation: 1},
		{Job: "fx", Nominal: at.Add(500 * time.Millisecond), Generation: 1},
		{Job: "fx", Nominal: at.Add(time.Second), Generation: 1},
		{Job: "fx", Nominal: at.Add(-time.Nanosecond), Generation: 1},
		{Job: "fy", Nominal: at, Generation: 1},
		{Job: "fx", Submission: "s1", Generation: 1},
		{Job: "fx", Submission: "s1", Nominal: at, Generation: 3},
		{Job: "fx", Submission: "s2", Generation: 1},
		{Job: "fx+s1", Nominal: at, Generation: 1},
		{Job: "fx", Nominal: time.Unix(-1, 500_000_000), Generation: 1},
		{Job: "fx", Nominal: time.Unix(-1, 0), Generation: 1},
		{Job: "fx", Nominal: time.Unix(0, 0), Generation: 1},
		{Job: "fx", Generation: 1},
	}
	for _, a := range ids {
		for _, b := range ids {
			same, want := tickOf(a) == tickOf(b), jobspec.TickKey(a) == jobspec.TickKey(b)
			if same != want {
				t.Errorf("%v and %v: one entry %v, tick keys %q and %q", a, b, same, jobspec.TickKey(a), jobspec.TickKey(b))
			}
		}
	}
}

// blockingRuns is a ledger whose GetRun counts its calls and answers
// once release is closed: the first call with err, the others with run.
type blockingRuns struct {
	ledger.Store
	release chan struct{}
	run     ledger.Run
	err     error
	calls   atomic.Int64
}

func (b *blockingRuns) GetRun(context.Context, string, time.Time) (ledger.Run, error) {
	if b.calls.Add(1) == 1 {
		<-b.release
		if b.err != nil {
			return ledger.Run{}, b.err
		}
	}
	return b.run, nil
}

// The messages that ask for a tick's run while it is being read wait for
// that read, and take its answer as a cached one (their vouch reads
// again when it does not cover them); a read that failed leaves each of
// them to read for itself.
func TestRunCacheReadsATickOnceAtATime(t *testing.T) {
	t.Parallel()
	id := ledger.RunID{Job: "fx", Nominal: time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC), Generation: 1}
	for _, readErr := range []error{nil, errors.New("connection lost")} {
		synctest.Test(t, func(t *testing.T) {
			l := &blockingRuns{release: make(chan struct{}), run: ledger.Run{ID: id, Fence: 3}, err: readErr}
			rc := &RunCache{}
			type answer struct {
				run    ledger.Run
				cached bool
				err    error
			}
			answers := make(chan answer, 10)
			for range 10 {
				go func() {
					run, cached, err := rc.get(t.Context(), l, id, time.Now())
					answers <- answer{run, cached, err}
				}()
			}
			synctest.Wait() // every get is blocked: one in its read, the others on it
			require.Equal(t, int64(1), l.calls.Load(), "one read for ten messages")
			close(l.release)
			fresh, failed := 0, 0
			for range 10 {
				a := <-answers
				if a.err != nil {
					failed++
					continue
				}
				require.Equal(t, l.run, a.run)
				if !a.cached {
					fresh++
				}
			}
			if readErr == nil {
				require.Equal(t, 1, fresh, "the read's own answer is fresh, the others' cached")
				require.Zero(t, failed)
				require.Equal(t, int64(1), l.calls.Load())
				return
			}
			require.Equal(t, 1, failed, "the failed read fails its own message alone")
			require.Equal(t, 9, fresh, "the others read for themselves")
			require.Equal(t, int64(10), l.calls.Load())
		})
	}
}
