package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
)

// runTimeJob is a job whose items come from items.
func runTimeJob(name string, items baton.ItemsFunc) baton.Job {
	j := bigJob(name, 0)
	j.Items = items
	return j
}

func TestRunTimeListStoredInPagesAndSent(t *testing.T) {
	t.Parallel()
	var items []baton.Item
	for i := range 150 {
		items = append(items, baton.Item{Name: fmt.Sprintf("i%04d", i), Payload: []byte(fmt.Sprint(i))})
	}
	b := setup(t, runTimeJob("rt", baton.ItemList(40, items...)))
	sum, err := b.coordinator("c1").Run(t.Context(), coordinator.Trigger{Job: "rt", At: t0})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeOpened, sum.Outcome)
	require.Equal(t, 150, sum.Enqueued)
	require.Equal(t, 2*ledger.PageItems+22, sum.Total, "the cursor is a position: page×64 + offset")
	require.False(t, sum.FannedOutAt.IsZero(), "the invocation ended the fan-out")

	// Three pages of 64, 64 and 22 items, in order, the last final.
	for p, want := range []int{64, 64, 22} {
		pg, err := b.ledger.GetPage(t.Context(), sum.Run, p)
		require.NoError(t, err)
		require.Len(t, pg.Items, want)
		require.Equal(t, p == 2, pg.Final)
		require.Equal(t, fmt.Sprintf("i%04d", p*64), pg.Items[0].Name)
		require.Equal(t, []byte(fmt.Sprint(p*64)), pg.Items[0].Payload)
	}
	// Each message is version 2 and names its page; no payload travels in it.
	b.queue.mu.Lock()
	defer b.queue.mu.Unlock()
	require.Len(t, b.queue.msgs, 150)
	seen := map[string]bool{}
	for _, m := range b.queue.msgs {
		msg, err := message.Decode(m.Body)
		require.NoError(t, err)
		require.Equal(t, message.Version, msg.Version)
		var i int
		_, err = fmt.Sscanf(msg.Key, "rt@2026-11-21T12:01:00Z#1/i%04d", &i)
		require.NoError(t, err, msg.Key)
		require.Equal(t, i/64, msg.Page, msg.Key)
		require.NotContains(t, string(m.Body), "payload")
		seen[msg.Key] = true
	}
	require.Len(t, seen, 150)
}

func TestRunTimeEmptyListSettles(t *testing.T) {
	t.Parallel()
	b := setup(t, runTimeJob("empty", baton.ItemList(10)))
	c := b.coordinator("c1")
	sum, err := c.Run(t.Context(), coordinator.Trigger{Job: "empty", At: t0})
	require.NoError(t, err)
	require.Zero(t, sum.Enqueued)
	run, err := c.Settle(t.Context(), "empty", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, run.State, "an empty list's run completes with no item")
}

func TestRunTimeItemsRefused(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		items baton.ItemsFunc
		want  string
	}{
		"out of order": {baton.ItemList(2, baton.Item{Name: "b"}, baton.Item{Name: "a"}), `item "a" follows "b": names must be in strictly ascending byte order`},
		"across pages": {baton.ItemList(1, baton.Item{Name: "b"}, baton.Item{Name: "b"}), `item "b" follows "b"`},
		"bad name":     {baton.ItemList(2, baton.Item{Name: "a b"}), `invalid item name "a b"`},
		"payload": {baton.ItemList(2, baton.Item{Name: "big", Payload: []byte(strings.Repeat("x", baton.MaxPayload+1))}),
			`item "big": payload of 204801 bytes, at most 204800`},
		"error": {func(context.Context, baton.ItemsRequest) (baton.ItemsPage, error) {
			return baton.ItemsPage{}, errors.New("database down")
		}, "database down"},
		"same cursor": {func(context.Context, baton.ItemsRequest) (baton.ItemsPage, error) {
			return baton.ItemsPage{Next: "again"}, nil
		}, `cursor "again": the next cursor is the same cursor`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, runTimeJob("bad", tc.items))
			_, err := b.coordinator("c1").Run(t.Context(), coordinator.Trigger{Job: "bad", At: t0})
			require.ErrorIs(t, err, coordinator.ErrItems)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "xxxxxxxx", "a payload is never quoted")
			run, err := b.ledger.GetRun(t.Context(), "bad", tick)
			require.NoError(t, err)
			require.Equal(t, ledger.RunFanningOut, run.State, "the run stays open: the next trigger resumes it")
		})
	}
}

// A fan-out stopped by its items function resumes after the last stored
// page: the function is asked again from that page's cursor, and every
// item is sent once (the stored pages are not sent again past the cursor).
func TestRunTimeResumeAfterStoredPages(t *testing.T) {
	t.Parallel()
	var items []baton.Item
	for i := range 300 {
		items = append(items, baton.Item{Name: fmt.Sprintf("i%04d", i)})
	}
	list := baton.ItemList(50, items...)
	var cursors []string
	failOnce := true
	fn := func(ctx context.Context, req baton.ItemsRequest) (baton.ItemsPage, error) {
		cursors = append(cursors, req.Cursor)
		if req.Cursor == "200" && failOnce {
			failOnce = false
			return baton.ItemsPage{}, errors.New("timeout")
		}
		return list(ctx, req)
	}
	b := setup(t, runTimeJob("resume", fn))
	c := b.coordinator("c1")
	c.Checkpoint = 64
	_, err := c.Run(t.Context(), coordinator.Trigger{Job: "resume", At: t0})
	require.ErrorContains(t, err, "timeout")
	require.Equal(t, []string{"", "50", "100", "150", "200"}, cursors)

	cursors = nil
	sum, err := c.Run(t.Context(), coordinator.Trigger{Job: "resume", At: t0})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeResumed, sum.Outcome)
	// Pages 0-2 (items 0-191) were stored and sent; page 3 starts at 192,
	// within the function's page at cursor 150.
	require.Equal(t, []string{"150", "200", "250"}, cursors)
	counts := b.queue.countByAsset(t)
	require.Len(t, counts, 300)
	for a, n := range counts {
		require.Equal(t, 1, n, a)
	}
}

// openSpy records the OpenRun calls of a ledger store.
type openSpy struct {
	ledger.Store
	mu    sync.Mutex
	opens []ledger.OpenRunParams
}

func (s *openSpy) OpenRun(ctx context.Context, p ledger.OpenRunParams) (ledger.Run, ledger.OpenOutcome, error) {
	s.mu.Lock()
	s.opens = append(s.opens, p)
	s.mu.Unlock()
	return s.Store.OpenRun(ctx, p)
}

// A run-time list's run opens with Pages and one shard per page of the
// job's declared expected size (so that a store partitions it from the
// start); without a declared size, with one; a submission, from its item
// count.
func TestRunTimeListOpensWithExpectedPages(t *testing.T) {
	t.Parallel()
	sized := runTimeJob("sized", baton.ItemList(64, baton.Item{Name: "a"}))
	sized.ExpectedItems = 100_000
	plain := runTimeJob("plain", baton.ItemList(64, baton.Item{Name: "a"}))
	b := setup(t, sized, plain, bigJob("cat", 200))
	spy := &openSpy{Store: b.ledger}
	c := b.coordinator("c1")
	c.Ledger = spy
	for _, j := range []string{"sized", "plain", "cat"} {
		_, err := c.Run(t.Context(), coordinator.Trigger{Job: j, At: t0})
		require.NoError(t, err, j)
	}
	var subs []baton.Item
	for i := range 300 {
		subs = append(subs, baton.Item{Name: fmt.Sprintf("s%03d", i)})
	}
	_, err := c.Submit(t.Context(), coordinator.Submission{Job: "plain", Key: "k1", Items: subs})
	require.NoError(t, err)
	spy.mu.Lock()
	defer spy.mu.Unlock()
	require.Len(t, spy.opens, 4)
	got := func(i int) [2]any { return [2]any{spy.opens[i].Shards, spy.opens[i].Pages} }
	require.Equal(t, [2]any{1563, true}, got(0), "⌈100,000 / 64⌉ pages")
	require.Equal(t, [2]any{1, true}, got(1), "no declared size: one")
	require.Equal(t, [2]any{4, false}, got(2), "a catalog: ⌈200 / 64⌉ shards")
	require.Equal(t, [2]any{5, true}, got(3), "a submission: ⌈300 / 64⌉ pages")
}
