// Package ledgertest is the conformance suite of ledger.Store. Every
// adapter runs it from one test:
//
//	func TestLedgerStore(t *testing.T) {
//		ledgertest.Run(t, ledgertest.Harness{NewStore: func(t *testing.T) ledger.Store { return newStore(t) }})
//	}
//
// Each case is also exported (TestOpenRun, TestClaim, …), so that one can
// be run alone: ledgertest.TestClaim(t, h).
//
// Every "must" and "returns" of the Store contract has a case here, plus
// concurrent cases for the invariants "one tick, one run" and "one claim
// wins", and a property-based test that drives random sequences of item
// calls against a model of the item state machine.
//
// Every case starts with t.Parallel(). Each names its jobs uniquely (unique
// across processes too), so NewStore may hand out one shared backend, such
// as one table, as well as fresh state. Times are UTC at millisecond
// precision and must come back exactly.
//
// The package's own tests run the suite against an in-memory store that
// follows the model, and the state-machine checker against stores broken
// on purpose, which it must falsify.
//
// # Reading of the contract
//
// Where the Store doc leaves a detail open, the suite pins the reading
// the core relies on, or leaves it open:
//   - An equal fence resumes a fanning_out run; an equal cursor advances.
//   - AdvanceRun and FinishRun of a tick without a record return
//     ErrNotFound.
//   - Claim's DEAD ("attempts exhausted") keeps Owner, Attempt, Fence and
//     StartedAt of the last successful claim; it sets FinishedAt.
//   - Complete, Fail, Release and Extend need no live lease, only that no
//     other claim happened; Release and Extend keep Owner and Attempt.
//   - Cancel of an absent item stores Owner "" and Attempt 0.
//   - Open: UpdatedAt after Resumed; Error while RUNNING (a reclaimed item
//     may keep its last failure reason); LeaseUntil once not RUNNING;
//     which of ErrTerminal and ErrConflict FinishRun returns for another
//     generation when the current one is finished.
package ledgertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
)

// Harness is what the suite needs of an adapter. Every ledger store must
// do all the suite asks: there are no capabilities to declare.
type Harness struct {
	// NewStore returns the store under test. It is called once per case
	// (and subtest); cleanup belongs in t.Cleanup. Cases never share jobs,
	// so the store may be fresh or shared.
	NewStore func(t *testing.T) ledger.Store
}

// Case is one conformance case.
type Case struct {
	Name string
	Func func(t *testing.T, h Harness)
}

// Cases lists every case, in the order Run runs them.
func Cases() []Case {
	return []Case{
		{"OpenRun", TestOpenRun},
		{"AdvanceRun", TestAdvanceRun},
		{"FinishRun", TestFinishRun},
		{"GetRun", TestGetRun},
		{"ListRuns", TestListRuns},
		{"ItemPartitions", TestItemPartitions},
		{"Claim", TestClaim},
		{"Holder", TestHolder},
		{"Complete", TestComplete},
		{"Fail", TestFail},
		{"Release", TestRelease},
		{"Extend", TestExtend},
		{"Cancel", TestCancel},
		{"TerminalIsTerminal", TestTerminalIsTerminal},
		{"GetItem", TestGetItem},
		{"ListItems", TestListItems},
		{"NoteWait", TestNoteWait},
		{"Shards", TestShards},
		{"ListItemRange", TestListItemRange},
		{"MarkDone", TestMarkDone},
		{"ListMarks", TestListMarks},
		{"PutPage", TestPutPage},
		{"PagePartitions", TestPagePartitions},
		{"SubmissionRuns", TestSubmissionRuns},
		{"ListSubmissions", TestListSubmissions},
		{"Concurrent", TestConcurrent},
		{"StateMachine", TestStateMachine},
	}
}

// Run runs every case against the stores h makes.
func Run(t *testing.T, h Harness) {
	t.Helper()
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) { c.Func(t, h) })
	}
}

// nominal is the tick every case uses; its jobs differ. Now values are
// nominal plus offsets, at millisecond precision.
var nominal = time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)

// at is the time d after the nominal time.
func at(d time.Duration) time.Time { return nominal.Add(d) }

var (
	jobPrefix = func() string {
		var b [4]byte
		_, _ = rand.Read(b[:])
		return "lt" + hex.EncodeToString(b[:])
	}()
	jobSeq atomic.Int64
)

// uniqueJob returns a job name no other case, and no other process running
// the suite, uses.
func uniqueJob() string {
	return fmt.Sprintf("%s-%d", jobPrefix, jobSeq.Add(1))
}

// bundle is one case's store and names.
type bundle struct {
	store ledger.Store
	ctx   context.Context
	job   string
}

func setup(t *testing.T, h Harness) *bundle {
	t.Helper()
	return &bundle{store: h.NewStore(t), ctx: t.Context(), job: uniqueJob()}
}

// runID is the bundle's run of the nominal tick, of generation gen.
func (b *bundle) runID(gen int) ledger.RunID {
	return ledger.RunID{Job: b.job, Nominal: nominal, Generation: gen}
}

// key is the item asset of generation 1 of the bundle's run.
func (b *bundle) key(asset string) ledger.ItemKey {
	return ledger.ItemKey{Run: b.runID(1), Asset: asset}
}

// requireItem requires got to be want in every field the contract defines.
func requireItem(t require.TestingT, want, got ledger.Item, msgAndArgs ...any) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	require.Equal(t, itemView(want), itemView(got), msgAndArgs...)
}

// requireRun requires got to be want.
func requireRun(t require.TestingT, want, got ledger.Run, msgAndArgs ...any) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	require.Equal(t, runView(want), runView(got), msgAndArgs...)
}

// getItem returns the stored record of key, which must exist.
func (b *bundle) getItem(t *testing.T, key ledger.ItemKey) ledger.Item {
	t.Helper()
	it, err := b.store.GetItem(b.ctx, key)
	require.NoError(t, err, "get item %s", key)
	return it
}

// getRun returns the stored run of the bundle's tick, which must exist.
func (b *bundle) getRun(t *testing.T) ledger.Run {
	t.Helper()
	r, err := b.store.GetRun(b.ctx, b.job, nominal)
	require.NoError(t, err, "get run %s", jobspec.TickKey(b.runID(1)))
	return r
}
