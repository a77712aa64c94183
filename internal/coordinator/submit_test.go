package coordinator_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/coordinator"
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
