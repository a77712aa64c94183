package coordinator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

func TestSubmitOpensOnceThenDedupes(t *testing.T) {
	t.Parallel()
	j := bigJob("ingest", 2)
	j.Retention = time.Hour
	b := setup(t, j)
	c := b.coordinator("c1")
	items := []baton.Item{{Name: "c", Payload: []byte("3")}, {Name: "a", Payload: []byte("1")}, {Name: "b"}}
	sum, err := c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "order-42", Items: items})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeOpened, sum.Outcome)
	require.False(t, sum.Deduped)
	require.Equal(t, baton.RunID{Job: "ingest", Submission: "order-42", Generation: 1}, sum.Run)
	require.Equal(t, 3, sum.Enqueued)

	pg, err := b.ledger.GetPage(t.Context(), sum.Run, 0)
	require.NoError(t, err)
	require.True(t, pg.Final)
	require.Equal(t, []ledger.PageItem{{Name: "a", Payload: []byte("1")}, {Name: "b"}, {Name: "c", Payload: []byte("3")}}, pg.Items, "stored sorted, with payloads")
	for _, k := range b.queue.keys(t) {
		require.Equal(t, sum.Run, k.Run)
	}
	b.queue.mu.Lock()
	for _, m := range b.queue.msgs {
		msg, err := message.Decode(m.Body)
		require.NoError(t, err)
		require.True(t, msg.Paged())
	}
	b.queue.mu.Unlock()

	// The same key again: the same run, nothing sent; another key: a run of its own.
	again, err := c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "order-42", Items: items[:1]})
	require.NoError(t, err)
	require.True(t, again.Deduped)
	require.Equal(t, sum.Run, again.Run)
	require.Zero(t, again.Enqueued)
	other, err := c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "order-43", Items: items[:1]})
	require.NoError(t, err)
	require.False(t, other.Deduped)
	require.Equal(t, "order-43", other.Run.Submission)

	// Finished, and submitted again within the retention: deduped; past it: generation 2.
	_, err = b.ledger.FinishRun(t.Context(), ledger.FinishRunParams{ID: sum.Run, Succeeded: 3, Now: b.clock.Now()})
	require.NoError(t, err)
	b.clock.Advance(59 * time.Minute)
	again, err = c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "order-42", Items: items})
	require.NoError(t, err)
	require.True(t, again.Deduped)
	b.clock.Advance(2 * time.Minute)
	next, err := c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "order-42", Items: items})
	require.NoError(t, err)
	require.False(t, next.Deduped)
	require.Equal(t, 2, next.Run.Generation, "past the retention the key opens its next generation")
	require.Equal(t, 3, next.Enqueued)
}

func TestSubmitRefusesBadSubmissions(t *testing.T) {
	t.Parallel()
	b := setup(t, bigJob("ingest", 2))
	c := b.coordinator("c1")
	many := make([]baton.Item, coordinator.MaxSubmissionItems+1)
	for i := range many {
		many[i].Name = fmt.Sprint("i", i)
	}
	for name, tc := range map[string]struct {
		s    coordinator.Submission
		want string
	}{
		"unknown job": {coordinator.Submission{Job: "nope", Key: "k", Items: []baton.Item{{Name: "a"}}}, `unknown job "nope"`},
		"bad key":     {coordinator.Submission{Job: "ingest", Key: "a key", Items: []baton.Item{{Name: "a"}}}, `dedupe key: invalid submission name "a key"`},
		"no items":    {coordinator.Submission{Job: "ingest", Key: "k"}, "no items"},
		"too many":    {coordinator.Submission{Job: "ingest", Key: "k", Items: many}, "100001 items, at most 100000"},
		"bad name":    {coordinator.Submission{Job: "ingest", Key: "k", Items: []baton.Item{{Name: "a/b"}}}, `invalid item name "a/b"`},
		"twice":       {coordinator.Submission{Job: "ingest", Key: "k", Items: []baton.Item{{Name: "a"}, {Name: "a"}}}, `item "a" listed twice`},
		"payload": {coordinator.Submission{Job: "ingest", Key: "k", Items: []baton.Item{{Name: "a", Payload: []byte(strings.Repeat("s", baton.MaxPayload+1))}}},
			`item "a": payload of 204801 bytes, at most 204800`},
	} {
		_, err := c.Submit(t.Context(), tc.s)
		require.ErrorIs(t, err, coordinator.ErrSubmission, name)
		require.ErrorContains(t, err, tc.want, name)
		require.NotContains(t, err.Error(), "sssss", "%s: a payload is never quoted", name)
	}
	require.Empty(t, b.queue.keys(t), "nothing sent")
}

func TestReplaySubmissionSendsItsStoredItemsAgain(t *testing.T) {
	t.Parallel()
	j := bigJob("ingest", 2)
	j.Retention = time.Hour
	b := setup(t, j)
	c := b.coordinator("c1")
	items := make([]baton.Item, 150) // three pages
	for i := range items {
		items[i] = baton.Item{Name: fmt.Sprintf("i%03d", i), Payload: []byte(fmt.Sprint(i))}
	}
	sum, err := c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "order-42", Items: items})
	require.NoError(t, err)
	require.Equal(t, 150, sum.Enqueued)

	_, err = c.ReplaySubmission(t.Context(), "ingest", "order-42", time.Time{})
	require.ErrorIs(t, err, coordinator.ErrReplayInFlight, "a run still in flight is not replayed")
	_, err = c.ReplaySubmission(t.Context(), "ingest", "order-7", time.Time{})
	require.ErrorIs(t, err, ledger.ErrNotFound)
	_, err = c.ReplaySubmission(t.Context(), "ingest", "bad key!", time.Time{})
	require.ErrorIs(t, err, coordinator.ErrSubmission)

	_, err = b.ledger.FinishRun(t.Context(), ledger.FinishRunParams{ID: sum.Run, Succeeded: 150, Now: b.clock.Now()})
	require.NoError(t, err)
	rep, err := c.ReplaySubmission(t.Context(), "ingest", "order-42", time.Time{})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeOpened, rep.Outcome)
	require.False(t, rep.Deduped)
	require.Equal(t, baton.RunID{Job: "ingest", Submission: "order-42", Generation: 2}, rep.Run, "within the retention too: a replay is forced")
	require.Equal(t, 150, rep.Enqueued)
	for p := 0; p < 3; p++ {
		old, err := b.ledger.GetPage(t.Context(), sum.Run, p)
		require.NoError(t, err)
		now, err := b.ledger.GetPage(t.Context(), rep.Run, p)
		require.NoError(t, err)
		require.Equal(t, old.Items, now.Items, "page %d: the same items and payloads", p)
		require.Equal(t, old.Final, now.Final)
	}
	gen2 := 0
	for _, k := range b.queue.keys(t) {
		if k.Run == rep.Run {
			gen2++
		}
	}
	require.Equal(t, 150, gen2)

	// The key now finds the replayed generation.
	again, err := c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "order-42", Items: items[:1]})
	require.NoError(t, err)
	require.True(t, again.Deduped)
	require.Equal(t, rep.Run, again.Run)
}

func TestSubmitToAClass(t *testing.T) {
	t.Parallel()
	b := setup(t, bigJob("ingest", 2))
	c := b.coordinator("c1")
	urgent := &sender{}
	c.Classes = map[string]queue.Sender{"urgent": urgent}
	items := []baton.Item{{Name: "a"}, {Name: "b"}}
	sum, err := c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "k1", Class: "urgent", Items: items})
	require.NoError(t, err)
	require.Equal(t, 2, sum.Enqueued)
	require.Len(t, urgent.keys(t), 2, "the class's queue got the items")
	require.Empty(t, b.queue.keys(t), "not the job's queue")

	_, err = c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "k2", Items: items})
	require.NoError(t, err)
	require.Len(t, b.queue.keys(t), 2, "no class: the job's queue")

	// A large class submission still sends every item to the class's
	// queue: no page shards, which consumers would expand into the job's.
	var many []baton.Item
	for i := range 1500 {
		many = append(many, baton.Item{Name: fmt.Sprintf("m%04d", i)})
	}
	sum, err = c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "k4", Class: "urgent", Items: many})
	require.NoError(t, err)
	require.Zero(t, sum.ShardMessages)
	require.Len(t, urgent.keys(t), 2+1500, "every item of a large class submission went to the class's queue")
	big, err := c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "k5", Items: many})
	require.NoError(t, err)
	require.Positive(t, big.ShardMessages, "without a class, the same submission goes out in page shards past the threshold")

	_, err = c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "k3", Class: "vip", Items: items})
	require.ErrorIs(t, err, coordinator.ErrSubmission)
	require.ErrorContains(t, err, `class "vip" is not a job queue of the catalog (classes: [urgent])`)
}

// waitingCoordinator is b's coordinator, which sleeps on the test's clock
// (SleepFunc advances it) and records the pauses it takes.
func waitingCoordinator(b *bundle, wait time.Duration, pauses *[]time.Duration) *coordinator.Coordinator {
	c := b.coordinator("c2")
	c.ContentionWait = wait
	c.SleepFunc = func(_ context.Context, d time.Duration) error {
		*pauses = append(*pauses, d)
		b.clock.Advance(d)
		return nil
	}
	return c
}

// A duplicate submission that finds the key's lease held by an opener
// that died after opening the run waits, with growing pauses, until the
// dead opener's lease expires, then takes the fan-out over: the run is
// resumed and its items sent, nothing fails.
func TestSubmitTakesOverFromADeadOpener(t *testing.T) {
	t.Parallel()
	j := bigJob("ingest", 1)
	b := setup(t, j)
	id := ledger.RunID{Job: "ingest", Submission: "k"}
	dead, err := b.leases.Acquire(t.Context(), lease.AcquireParams{Job: jobspec.TickKey(id), Owner: "dead", TTL: 20 * time.Second, Now: b.clock.Now(), Skew: time.Second})
	require.NoError(t, err)
	_, out, err := b.ledger.OpenRun(t.Context(), ledger.OpenRunParams{Job: "ingest", Submission: "k", Fence: dead.Fence, Now: b.clock.Now(), Pages: true})
	require.NoError(t, err)
	require.Equal(t, ledger.Opened, out)

	var pauses []time.Duration
	c := waitingCoordinator(b, time.Minute, &pauses)
	items := []baton.Item{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	sum, err := c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "k", Items: items})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeResumed, sum.Outcome, "%+v", sum)
	require.False(t, sum.Deduped)
	require.Equal(t, 3, sum.Enqueued)
	require.Greater(t, sum.Fence, dead.Fence)
	require.GreaterOrEqual(t, b.clock.Now().Sub(t0), 21*time.Second, "it waited for the lease to expire, skew included")
	require.Greater(t, len(pauses), 3)
	require.Less(t, pauses[0], pauses[len(pauses)-1], "the pauses grow")
	for _, p := range pauses {
		require.LessOrEqual(t, p, time.Second, "each pause is bounded")
	}
}

// A holder still busy at the end of the contention wait: the caller
// answers with the holder's run (Deduped, OutcomeSkipped), or, when the
// holder has not opened it yet, OutcomeSkipped with Pending; a negative
// wait answers at once.
func TestSubmitAnswersWithTheBusyHoldersRun(t *testing.T) {
	t.Parallel()
	j := bigJob("ingest", 1)
	b := setup(t, j)
	items := []baton.Item{{Name: "a"}}
	for _, key := range []string{"opened", "unopened"} {
		id := ledger.RunID{Job: "ingest", Submission: key}
		live, err := b.leases.Acquire(t.Context(), lease.AcquireParams{Job: jobspec.TickKey(id), Owner: "live", TTL: time.Hour, Now: b.clock.Now()})
		require.NoError(t, err)
		if key == "opened" {
			_, _, err = b.ledger.OpenRun(t.Context(), ledger.OpenRunParams{Job: "ingest", Submission: key, Fence: live.Fence, Now: b.clock.Now(), Pages: true})
			require.NoError(t, err)
		}
		var pauses []time.Duration
		c := waitingCoordinator(b, 10*time.Second, &pauses)
		before := b.clock.Now()
		sum, err := c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: key, Items: items})
		require.NoError(t, err)
		require.Equal(t, coordinator.OutcomeSkipped, sum.Outcome)
		require.Equal(t, "live", sum.Holder.Owner)
		waited := b.clock.Now().Sub(before)
		require.LessOrEqual(t, waited, 10*time.Second, "the wait is bounded")
		require.Greater(t, waited, 5*time.Second)
		if key == "opened" {
			require.True(t, sum.Deduped)
			require.False(t, sum.Pending)
			require.Equal(t, baton.RunID{Job: "ingest", Submission: key, Generation: 1}, sum.Run)
		} else {
			require.False(t, sum.Deduped)
			require.True(t, sum.Pending)
		}
		require.Zero(t, sum.Enqueued)

		c.ContentionWait = -1
		pauses = nil
		sum, err = c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: key, Items: items})
		require.NoError(t, err)
		require.Equal(t, coordinator.OutcomeSkipped, sum.Outcome)
		require.Empty(t, pauses, "a negative wait answers at once")
	}
}

// A run found by its key says whether it was opened with other items; a
// run left fanning out with other items is not resumed with these (its
// stored pages and these would mix); a run opened without a digest (by an
// earlier version) claims no difference.
func TestSubmitSaysWhenTheItemsDiffer(t *testing.T) {
	t.Parallel()
	b := setup(t, bigJob("ingest", 1))
	c := b.coordinator("c1")
	items := []baton.Item{{Name: "a", Payload: []byte("1")}, {Name: "b"}}
	_, err := c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "k", Items: items})
	require.NoError(t, err)
	sum, err := c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "k", Items: []baton.Item{{Name: "b"}, {Name: "a", Payload: []byte("1")}}})
	require.NoError(t, err)
	require.True(t, sum.Deduped)
	require.False(t, sum.PayloadDiffers)
	sum, err = c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "k", Items: []baton.Item{{Name: "a", Payload: []byte("2")}, {Name: "b"}}})
	require.NoError(t, err)
	require.True(t, sum.Deduped)
	require.True(t, sum.PayloadDiffers)

	// Left fanning out by a dead opener with other items.
	other := ledger.DigestItems([]ledger.PageItem{{Name: "z"}})
	_, _, err = b.ledger.OpenRun(t.Context(), ledger.OpenRunParams{Job: "ingest", Submission: "left", Fence: 1, Now: b.clock.Now(), Pages: true, Digest: other})
	require.NoError(t, err)
	sent := len(b.queue.keys(t))
	sum, err = c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "left", Items: items})
	require.NoError(t, err)
	require.True(t, sum.Deduped)
	require.True(t, sum.PayloadDiffers)
	require.Len(t, b.queue.keys(t), sent, "nothing sent")
	run, err := ledger.GetRunOf(t.Context(), b.ledger, sum.Run)
	require.NoError(t, err)
	require.Equal(t, ledger.RunFanningOut, run.State)
	sum, err = c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "left", Items: []baton.Item{{Name: "z"}}})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeResumed, sum.Outcome, "its own items resume it")
	require.Equal(t, 1, sum.Enqueued)

	// Opened without a digest: not known, no difference claimed.
	r, _, err := b.ledger.OpenRun(t.Context(), ledger.OpenRunParams{Job: "ingest", Submission: "old", Fence: 1, Now: b.clock.Now(), Pages: true})
	require.NoError(t, err)
	_, err = b.ledger.AdvanceRun(t.Context(), ledger.AdvanceRunParams{ID: r.ID, Fence: 1, Cursor: 1, Done: true, Now: b.clock.Now()})
	require.NoError(t, err)
	sum, err = c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "old", Items: items})
	require.NoError(t, err)
	require.True(t, sum.Deduped)
	require.False(t, sum.PayloadDiffers)
}

// Two replays of one finished submission at once replay it once: the one
// that waited for the other's lease finds, once it holds the key, that
// the generation it was asked to replay is no longer the key's latest,
// and answers with the other's run (deduped) instead of opening another.
func TestReplaySubmissionThatWaitedForAnotherReplayOpensNothing(t *testing.T) {
	t.Parallel()
	j := bigJob("ingest", 1)
	j.Retention = time.Hour
	b := setup(t, j)
	items := []baton.Item{{Name: "a"}, {Name: "b"}}
	sum, err := b.coordinator("c1").Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "k", Items: items})
	require.NoError(t, err)
	_, err = b.ledger.FinishRun(t.Context(), ledger.FinishRunParams{ID: sum.Run, Succeeded: 2, Now: b.clock.Now()})
	require.NoError(t, err)

	// Another replay holds the key's lease; while this one waits, it
	// opens generation 2, fans it out and lets the lease go.
	id := ledger.RunID{Job: "ingest", Submission: "k"}
	other, err := b.leases.Acquire(t.Context(), lease.AcquireParams{Job: jobspec.TickKey(id), Owner: "other", TTL: time.Minute, Now: b.clock.Now()})
	require.NoError(t, err)
	var pauses []time.Duration
	c := waitingCoordinator(b, time.Minute, &pauses)
	c.SleepFunc = func(_ context.Context, d time.Duration) error {
		if len(pauses) == 0 {
			require.NoError(t, b.leases.Release(t.Context(), lease.ReleaseParams{Job: jobspec.TickKey(id), Owner: "other", Fence: other.Fence}))
			rep, err := b.coordinator("c3").ReplaySubmission(t.Context(), "ingest", "k", time.Time{})
			require.NoError(t, err)
			require.Equal(t, 2, rep.Run.Generation)
		}
		pauses = append(pauses, d)
		b.clock.Advance(d)
		return nil
	}
	rep, err := c.ReplaySubmission(t.Context(), "ingest", "k", time.Time{})
	require.NoError(t, err)
	require.NotEmpty(t, pauses, "it waited for the other replay")
	require.True(t, rep.Deduped, "%+v", rep)
	require.Equal(t, baton.RunID{Job: "ingest", Submission: "k", Generation: 2}, rep.Run)
	require.Zero(t, rep.Enqueued)
	run, err := ledger.GetRunOf(t.Context(), b.ledger, id)
	require.NoError(t, err)
	require.Equal(t, 2, run.ID.Generation, "replayed once")
	require.Len(t, b.queue.keys(t), 4, "the submission's items and one replay's")
}
