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
