package fanin_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/fanin"
	"github.com/batonhq/baton/internal/jobmodeltest"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/sqlite"
)

type sent struct {
	mu   sync.Mutex
	msgs []string // item keys
}

func (s *sent) SendBatch(_ context.Context, msgs []queue.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		d, err := message.Decode(m.Body)
		if err != nil {
			return err
		}
		s.msgs = append(s.msgs, d.Key)
	}
	return nil
}

type dagBundle struct {
	l   ledger.Store
	job baton.Job
	run ledger.RunID
	now time.Time
}

func setupDAG(t *testing.T) *dagBundle {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	j := baton.Job{Name: "dag", Schedule: "rate(1 minute)", Assets: []string{"a1", "a2", "a3"}, Derived: jobmodeltest.Derived,
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })}
	require.NoError(t, j.Validate())
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	return &dagBundle{l: sqlite.NewLedgerStore(db), job: j, run: ledger.RunID{Job: "dag", Nominal: now, Generation: 1}, now: now}
}

// end claims the item and ends it succeeded, or dead when dead is set.
func (b *dagBundle) end(t *testing.T, asset string, dead bool) {
	t.Helper()
	key := ledger.ItemKey{Run: b.run, Asset: asset}
	_, err := b.l.Claim(t.Context(), ledger.ClaimParams{Key: key, Owner: "w", LeaseUntil: b.now.Add(time.Minute), Now: b.now})
	require.NoError(t, err)
	if dead {
		_, err = b.l.Fail(t.Context(), ledger.FailParams{Key: key, Owner: "w", Attempt: 1, Reason: "boom", Permanent: true, Now: b.now})
	} else {
		_, err = b.l.Complete(t.Context(), ledger.CompleteParams{Key: key, Owner: "w", Attempt: 1, Now: b.now})
	}
	require.NoError(t, err)
}

func (b *dagBundle) check(t *testing.T, q queue.Sender, input string) fanin.Result {
	t.Helper()
	res, err := fanin.Check(t.Context(), fanin.Params{Ledger: b.l, Queue: q, Def: b.job, Run: b.run, Fence: 1, Input: input, Now: b.now})
	require.NoError(t, err)
	return res
}

// One check after an input ends DEAD cancels the whole chain below it, to
// the third level, in one pass.
func TestCheckCancelsDownTheGraphInOnePass(t *testing.T) {
	t.Parallel()
	b := setupDAG(t)
	b.end(t, "a1", false)
	b.end(t, "a2", false)
	b.end(t, "a3", true)
	res := b.check(t, nil, "a3")
	require.Equal(t, []string{"y", "z", "top"}, res.Cancelled)
	items, err := b.l.ListItems(t.Context(), b.run)
	require.NoError(t, err)
	reasons := map[string]string{}
	for _, it := range items {
		if it.State == ledger.ItemCancelled {
			reasons[it.Key.Asset] = it.Error
		}
	}
	require.Equal(t, map[string]string{"y": "input a3 is DEAD", "z": "input y is CANCELLED", "top": "input z is CANCELLED"}, reasons)
}

// A settle's check (every derived item) also cancels the chain in one pass,
// whatever order the items are listed in.
func TestSettleCheckCancelsDownTheGraph(t *testing.T) {
	t.Parallel()
	b := setupDAG(t)
	b.end(t, "a3", true)
	res := b.check(t, nil, "")
	require.ElementsMatch(t, []string{"y", "z", "top"}, res.Cancelled)
	require.ElementsMatch(t, []string{"x"}, res.Waiting)
}

// Each level is enqueued once its inputs succeeded, and only then: the
// check after a derived item succeeds enqueues the next level; checks
// repeated (duplicate deliveries) enqueue nothing once the item has a
// record.
func TestCheckEnqueuesLevelByLevel(t *testing.T) {
	t.Parallel()
	b := setupDAG(t)
	q := &sent{}
	key := func(a string) string { return ledger.ItemKey{Run: b.run, Asset: a}.String() }
	b.end(t, "a1", false)
	b.end(t, "a2", false)
	require.Equal(t, []string{"x"}, b.check(t, q, "a2").Enqueued)
	b.end(t, "x", false)
	require.Empty(t, b.check(t, q, "x").Enqueued, "z waits on y")
	b.end(t, "a3", false)
	require.Equal(t, []string{"y"}, b.check(t, q, "a3").Enqueued)
	b.end(t, "y", false)
	require.Equal(t, []string{"z"}, b.check(t, q, "y").Enqueued)
	b.end(t, "z", false)
	for range 3 { // duplicate deliveries of z's message before top is claimed
		require.Equal(t, []string{"top"}, b.check(t, q, "z").Enqueued)
	}
	_, err := b.l.Claim(t.Context(), ledger.ClaimParams{Key: ledger.ItemKey{Run: b.run, Asset: "top"}, Owner: "w", LeaseUntil: b.now.Add(time.Minute), Now: b.now})
	require.NoError(t, err)
	require.Empty(t, b.check(t, q, "z").Enqueued, "top is claimed: its own message drives it")
	require.Equal(t, []string{key("x"), key("y"), key("z"), key("top"), key("top"), key("top")}, q.msgs)
}

// A derived item left RUNNING under a claim that ended an item lease ago
// or more is sent again by the check with Resend (a trigger's settle): its messages may all be lost (a
// queue's redrive dead-letters a message whose consumers died at its last
// receives), and nothing else would finish it. Under a live claim, or one
// just expired (its message is due again), the check sends nothing.
func TestCheckResendsADerivedItemWhoseClaimEndedLongAgo(t *testing.T) {
	t.Parallel()
	b := setupDAG(t)
	for _, a := range []string{"a1", "a2"} {
		b.end(t, a, false)
	}
	key := ledger.ItemKey{Run: b.run, Asset: "x"}
	claimed, err := b.l.Claim(t.Context(), ledger.ClaimParams{Key: key, Owner: "dead", LeaseUntil: b.now.Add(time.Minute), Now: b.now})
	require.NoError(t, err)
	lease := b.job.Limits.ClockSkew + 30*time.Second // the job's item lease (the default)
	for _, c := range []struct {
		at     time.Time
		resend bool
	}{
		{b.now, false},
		{claimed.LeaseUntil.Add(time.Second), false},
		{claimed.LeaseUntil.Add(lease - time.Second), false},
		{claimed.LeaseUntil.Add(lease), true},
		{claimed.LeaseUntil.Add(time.Hour), true},
	} {
		q := &sent{}
		quiet, err := fanin.Check(t.Context(), fanin.Params{Ledger: b.l, Queue: q, Def: b.job, Run: b.run, Fence: 1, Now: c.at})
		require.NoError(t, err)
		require.Empty(t, quiet.Enqueued, "without Resend, never")
		res, err := fanin.Check(t.Context(), fanin.Params{Ledger: b.l, Queue: q, Def: b.job, Run: b.run, Fence: 1, Resend: true, Now: c.at})
		require.NoError(t, err)
		if c.resend {
			require.Equal(t, []string{"x"}, res.Enqueued, "at %s", c.at)
			require.Equal(t, []string{key.String()}, q.msgs)
		} else {
			require.Empty(t, res.Enqueued, "at %s", c.at)
			require.Contains(t, res.Waiting, "x")
		}
	}
}
