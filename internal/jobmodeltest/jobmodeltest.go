// Package jobmodeltest is the conformance suite of the job model end to
// end: each case runs jobs through the coordinator, the queue, the
// consumers and the ledger of the backend under test (the local runtime,
// internal/exec), the same way on every engine. Every engine runs it from
// one test, through one Harness:
//
//	func TestJobModel(t *testing.T) {
//		jobmodeltest.Run(t, jobmodeltest.Harness{Engine: "sqlite", OpenFunc: open,
//			Caps: jobmodeltest.Capabilities{PriorityPool: true}})
//	}
//
// The cases are grouped by domain, one file each:
//
//   - Items (items.go): a run-time item list stored in pages, resumed
//     after its items function fails, settling while it still fans out;
//     a submission deduped by its key, and submitted by 8 callers at once.
//   - Bulk (bulk.go): bulk jobs whose shards run their items in place.
//   - Limits (limits.go): shared rate limits (N starts per interval), an
//     in-flight limit, and limits per key chosen at run time.
//   - Retries (retry.go): a processor's RetryAfter and a job's RetryPolicy.
//   - Priorities (priority.go): two priority classes (job queues with
//     their concurrency shares) and, where empty receives are cheap, one
//     pool served highest Priority first.
//   - DAG (dag.go): derived items on several levels, a large run settled
//     by its consumers alone, and a graph beside a run-time list.
//   - Heartbeats (heartbeat.go): a long item kept by its heartbeats and a
//     cancel reaching an item that never heartbeats.
//   - Resume (resume.go): the runtime killed mid fan-out, then restarted.
//   - Chains (chain.go): a job's finish starting another, and a chained
//     summary reading a run-time list's results.
//
// Run runs every group; RunGroup runs one, for a caller that needs only
// it. A case an engine cannot run skips with the reason, by a
// Capabilities field: none does today.
package jobmodeltest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
)

// Harness describes an engine under test.
type Harness struct {
	// Engine names the engine in the cases' messages: "sqlite",
	// "postgres", "aws".
	Engine string

	// OpenFunc returns a fresh backend on the engine for one case; its
	// cleanup belongs in t.Cleanup. jobQueues are the names of the job
	// queues (baton.JobQueue) the case's jobs use: an engine whose job
	// queues are made beforehand (SQS) makes them and opens the backend
	// with them; the others make them as they are named.
	OpenFunc func(t *testing.T, jobQueues ...string) backend.Backend

	// NowFunc is the engine's clock: the cases read the ticks they
	// trigger and the times they hand the stores from it, and their
	// runtimes run on it (exec.Options.NowFunc); nil means time.Now. It
	// must be the clock the engine's adapters keep themselves, which they
	// also read on their own (a queue stamps a delayed message's
	// visibility when it is sent: queue.Sender takes no Now). On the three
	// engines of today it is nil, the machine's: on the embedded store a
	// clock two hours behind it leaves the Resume case's crashed run
	// unsettled. The delays and spreads the cases check are measured on
	// the monotonic clock, as the consumers wait them out.
	NowFunc func() time.Time

	// Caps says what the engine can and cannot do.
	Caps Capabilities
}

// Capabilities are what engines differ in that a case checks.
type Capabilities struct {
	// PriorityPool: priority classes with a Priority share one pool of
	// consumers, served highest Priority first, because an empty receive
	// costs next to nothing (backend.Backend.CheapProbes, which must say
	// the same). Without it (SQS) the classes are separate queues weighted
	// by their concurrency, with no order between them; the PriorityPool
	// case checks the guarantee the engine declares.
	PriorityPool bool
}

// now reads the harness's clock.
func (h Harness) now() time.Time {
	if h.NowFunc != nil {
		return h.NowFunc()
	}
	return time.Now()
}

// open opens a fresh backend for a case.
func (h Harness) open(t *testing.T, jobQueues ...string) backend.Backend {
	t.Helper()
	require.NotNil(t, h.OpenFunc, "the harness of engine %q has no OpenFunc", h.Engine)
	return h.OpenFunc(t, jobQueues...)
}

// runtime makes a local runtime on b with o on the harness's clock.
func (h Harness) runtime(t *testing.T, b backend.Backend, o exec.Options) *exec.Runtime {
	t.Helper()
	o.NowFunc = h.NowFunc
	eng, err := exec.New(b, o)
	require.NoError(t, err)
	return eng
}

// Case is one case of the suite.
type Case struct {
	Name string
	Func func(t *testing.T, h Harness)
}

// Group is the cases of one domain.
type Group struct {
	Name  string
	Cases []Case
}

// The groups' names, for RunGroup.
const (
	Items      = "Items"
	Bulk       = "Bulk"
	Limits     = "Limits"
	Retries    = "Retries"
	Priorities = "Priorities"
	DAG        = "DAG"
	Heartbeats = "Heartbeats"
	Resume     = "Resume"
	Chains     = "Chains"
)

// Groups lists every group and its cases, in the order Run runs them.
func Groups() []Group {
	return []Group{
		{Items, []Case{
			{"RunTimeItems", TestRunTimeItems},
			{"RunTimeListSettlesDuringFanOut", TestRunTimeListSettlesDuringFanOut},
			{"SubmissionDeduped", TestSubmissionDeduped},
			{"SubmissionContention", TestSubmissionContention},
		}},
		{Bulk, []Case{
			{"BulkShardsRunInPlace", TestBulkShardsRunInPlace},
			{"BulkRunTimePagesRunInPlace", TestBulkRunTimePagesRunInPlace},
		}},
		{Limits, []Case{
			{"SharedRateLimits", TestSharedRateLimits},
			{"InFlightLimit", TestInFlightLimit},
			{"KeyedLimits", TestKeyedLimits},
		}},
		{Retries, []Case{
			{"RetryDelays", TestRetryDelays},
		}},
		{Priorities, []Case{
			{"PriorityClasses", TestPriorityClasses},
			{"PriorityPool", TestPriorityPool},
		}},
		{DAG, []Case{
			{"TwoLevelDAG", TestTwoLevelDAG},
			{"LargeRunSettlesByConsumers", TestLargeRunSettlesByConsumers},
			{"RunTimeListBesideDAG", TestRunTimeListBesideDAG},
		}},
		{Heartbeats, []Case{
			{"HeartbeatingLongItem", TestHeartbeatingLongItem},
		}},
		{Resume, []Case{
			{"ResumeAndCatchUpAfterACrash", TestResumeAndCatchUpAfterACrash},
		}},
		{Chains, []Case{
			{"Chain", TestChain},
			{"SummaryOverRunTimeItems", TestSummaryOverRunTimeItems},
		}},
	}
}

// Cases lists every case of every group, in the order Run runs them.
func Cases() []Case {
	var out []Case
	for _, g := range Groups() {
		out = append(out, g.Cases...)
	}
	return out
}

// Run runs every case on the engine h describes, as subtests
// <group>/<case>, every one in parallel on a backend of its own.
func Run(t *testing.T, h Harness) {
	t.Helper()
	for _, g := range Groups() {
		t.Run(g.Name, func(t *testing.T) {
			t.Parallel()
			runCases(t, h, g.Cases)
		})
	}
}

// RunGroup runs the cases of the group named name (Items, Bulk, …) on
// the engine h describes, as subtests named for the cases. A name that
// is no group fails the test.
func RunGroup(t *testing.T, h Harness, name string) {
	t.Helper()
	g, err := groupNamed(name)
	require.NoError(t, err)
	runCases(t, h, g.Cases)
}

// groupNamed returns the group named name.
func groupNamed(name string) (Group, error) {
	var names []string
	for _, g := range Groups() {
		if g.Name == name {
			return g, nil
		}
		names = append(names, g.Name)
	}
	return Group{}, fmt.Errorf("jobmodeltest has no group %q (its groups: %s)", name, strings.Join(names, ", "))
}

func runCases(t *testing.T, h Harness, cases []Case) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { c.Func(t, h) })
	}
}

// consume runs eng's consumers until the returned func, which stops them
// and waits for their batches in flight.
func consume(t *testing.T, eng *exec.Runtime) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Consume(ctx) })
	return func() { cancel(); wg.Wait() }
}

// waitFinished polls the run until it is finished, for 90 seconds at
// most; it never settles the run itself (the consumers must).
func waitFinished(t *testing.T, l ledger.Store, id ledger.RunID) ledger.Run {
	t.Helper()
	return waitRun(t, l, id, 90*time.Second)
}

// waitFinishedItems polls the run until it is complete or partial, for
// 30 seconds at most, and lists its items; it never settles the run
// itself (the consumers must).
func waitFinishedItems(t *testing.T, l ledger.Store, id ledger.RunID) (ledger.Run, []ledger.Item) {
	t.Helper()
	run := waitRun(t, l, id, 30*time.Second)
	items, err := l.ListItems(t.Context(), id)
	require.NoError(t, err)
	return run, items
}

// waitRun polls the run until it is finished, within bound; a run not
// finished by then fails the test with the run and its items.
func waitRun(t *testing.T, l ledger.Store, id ledger.RunID, bound time.Duration) ledger.Run {
	t.Helper()
	ctx, stop := context.WithTimeout(t.Context(), bound)
	defer stop()
	for {
		r, err := ledger.GetRunOf(ctx, l, id)
		if err == nil && r.State.Finished() {
			return r
		}
		select {
		case <-ctx.Done():
			items, _ := l.ListItems(context.WithoutCancel(ctx), id)
			t.Fatalf("run %s not finished within %s: %+v (%v); items %s", id, bound, r, err, itemStates(items))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// itemStates lists the items' states, at most the first 20.
func itemStates(items []ledger.Item) string {
	out := ""
	for i, it := range items {
		if i == 20 {
			return out + fmt.Sprintf(" … (%d in all)", len(items))
		}
		out += fmt.Sprintf(" %s=%s", it.Key.Asset, it.State)
	}
	return out
}
