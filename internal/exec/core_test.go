package exec

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
)

func openSQLite(t *testing.T) backend.Backend {
	t.Helper()
	b, err := sqlitebackend.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

func chainedCatalog() *baton.Catalog {
	ok := baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return []byte(`{}`), nil })
	return baton.MustCatalog(
		baton.Job{Name: "up", Schedule: "rate(1 minute)", Assets: []string{"u1"}, Processor: ok, Chains: []baton.Chain{{Job: "down"}}},
		baton.Job{Name: "down", Assets: []string{"d1"}, Processor: ok, Queue: baton.JobQueue{Name: "own"}},
	)
}

// Build refuses parts it cannot build from, naming what is missing; a
// core without a lease store builds no coordinator, one without an
// effect store no consumer.
func TestBuildNamesWhatIsMissing(t *testing.T) {
	t.Parallel()
	b := openSQLite(t)
	_, err := Build(Parts{})
	require.ErrorIs(t, err, ErrNoCatalog)
	_, err = Build(Parts{Catalog: chainedCatalog()})
	require.ErrorContains(t, err, "no [ledger work queue]")
	_, err = Build(Parts{Catalog: chainedCatalog(), Ledger: b.Ledger, Work: b.Work})
	require.ErrorContains(t, err, "no queue own for jobs [down]")

	parts, queues, err := PartsOf(t.Context(), b, chainedCatalog())
	require.NoError(t, err)
	require.Len(t, queues, 1)
	require.Contains(t, parts.JobQueues, "own")
	bare := parts
	bare.Leases, bare.Effects, bare.MaxReceives = nil, nil, -1
	core, err := Build(bare)
	require.NoError(t, err)
	_, err = core.Coordinator("x")
	require.ErrorContains(t, err, "no lease store")
	_, err = core.Consumer(nil, "x")
	require.ErrorContains(t, err, "no effect store")
	bare.Effects = b.Effects
	core, err = Build(bare)
	require.NoError(t, err)
	_, err = core.Consumer(nil, "x")
	require.ErrorContains(t, err, "MaxReceives must not be negative")
}

// The runtime's consumers, the shared queue's and each job queue's, share
// the core's run and page caches (one per process, as consumer.Consumer
// asks) and send through its one router.
func TestRuntimeConsumersShareTheCore(t *testing.T) {
	t.Parallel()
	e, err := New(openSQLite(t), Options{Catalog: chainedCatalog()})
	require.NoError(t, err)
	require.Len(t, e.pools, 1)
	own := e.pools[0].consumer
	require.NotNil(t, e.Consumer.Runs)
	require.Same(t, e.Consumer.Runs, own.Runs, "one run cache")
	require.Same(t, e.Consumer.Pages, own.Pages, "one page cache")
	require.Same(t, e.core.runs, own.Runs)
	require.NotNil(t, own.ChainsFunc, "the job queue's consumer starts chains too")
	require.Equal(t, e.opts.Owner+"/consumer-own", own.Owner)
	require.Equal(t, e.opts.Owner+"/coordinator", e.Coordinator.Owner)
	require.Contains(t, e.Coordinator.Classes, "own", "submissions may name the job queue as a class")
}

// Incomplete is the one retry decision of every transport: a tick
// waiting behind another holder's lease, a submission whose key another
// caller is opening, and a fan-out stopped early are to be retried
// (ErrIncomplete); a plain duplicate, a found submission and a finished
// fan-out are done.
func TestIncomplete(t *testing.T) {
	t.Parallel()
	nominal := time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	holder := &lease.Lease{Owner: "other", ExpiresAt: nominal.Add(time.Minute), Fence: 3}
	run := ledger.RunID{Job: "fx", Nominal: nominal, Generation: 1}
	cases := []struct {
		name string
		sum  coordinator.Summary
		want string // "" when done
	}{
		{"opened", coordinator.Summary{Job: "fx", Nominal: nominal, Run: run, Outcome: coordinator.OutcomeOpened, Cursor: 2, Total: 2}, ""},
		{"duplicate", coordinator.Summary{Job: "fx", Nominal: nominal, Outcome: coordinator.OutcomeSkipped, Holder: holder}, ""},
		{"deduped submission", coordinator.Summary{Job: "fx", Outcome: coordinator.OutcomeSkipped, Deduped: true, Holder: holder}, ""},
		{"tick pending", coordinator.Summary{Job: "fx", Nominal: nominal, Outcome: coordinator.OutcomeSkipped, Pending: true, Holder: holder},
			"fan-out incomplete: tick 2026-11-21T12:01:00Z of job fx not run yet: lease held by other until 2026-11-21T12:02:00Z; a retry runs it"},
		{"submission pending", coordinator.Summary{Job: "fx", Outcome: coordinator.OutcomeSkipped, Pending: true, Holder: holder},
			"fan-out incomplete: submission of job fx not opened yet: lease held by other until 2026-11-21T12:02:00Z; a retry finds it"},
		{"pending, holder unknown", coordinator.Summary{Job: "fx", Nominal: nominal, Outcome: coordinator.OutcomeSkipped, Pending: true},
			"lease held by another caller; a retry runs it"},
		{"stopped", coordinator.Summary{Job: "fx", Nominal: nominal, Run: run, Outcome: coordinator.OutcomeOpened, Stopped: coordinator.StoppedDeadline, Cursor: 1, Total: 4},
			"fan-out incomplete: run " + run.String() + " stopped (deadline) at 1 of 4 assets; a retry resumes it"},
	}
	for _, c := range cases {
		err := Incomplete(c.sum)
		if c.want == "" {
			require.NoError(t, err, c.name)
			continue
		}
		require.ErrorIs(t, err, ErrIncomplete, c.name)
		require.ErrorContains(t, err, c.want, c.name)
	}
	require.False(t, errors.Is(Incomplete(coordinator.Summary{}), ErrIncomplete))
}

// Respond carries the summary into the response; the caller adds the
// request's identity.
func TestRespond(t *testing.T) {
	t.Parallel()
	nominal := time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	run := ledger.RunID{Job: "fx", Nominal: nominal, Generation: 2}
	r := Respond(coordinator.Summary{Job: "fx", Run: run, Nominal: nominal, Outcome: coordinator.OutcomeSkipped, Enqueued: 3, Cursor: 4, Total: 5, Fence: 6,
		Holder: &lease.Lease{Owner: "o", ExpiresAt: nominal, Fence: 7}, AcquireLatency: 1500 * time.Microsecond, Duration: 2 * time.Second, Deduped: true})
	require.Equal(t, CoordinatorResponse{Job: "fx", Run: run.String(), Nominal: nominal, Outcome: "skipped", Enqueued: 3, Cursor: 4, Total: 5, Fence: 6,
		Holder: &Holder{Owner: "o", ExpiresAt: nominal, Fence: 7}, Deduped: true, AcquireLatencyMS: 1.5, DurationMS: 2000}, r)
	require.Empty(t, Respond(coordinator.Summary{Job: "fx", Outcome: coordinator.OutcomeSkipped}).Run, "no run when skipped")
}
