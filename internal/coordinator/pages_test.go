package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
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

// pageCoverage counts, per item name, the messages that stand for it:
// an item message for its item, a page shard for every item of its
// stored page (read from the ledger); it checks each page shard's key
// is its page's first item.
func pageCoverage(t *testing.T, b *bundle, id ledger.RunID) (counts map[string]int, shards, items int) {
	t.Helper()
	counts = map[string]int{}
	b.queue.mu.Lock()
	defer b.queue.mu.Unlock()
	for _, m := range b.queue.msgs {
		msg, err := message.Decode(m.Body)
		require.NoError(t, err)
		k, err := msg.ItemKey()
		require.NoError(t, err)
		require.Equal(t, id, k.Run)
		if !msg.PageShard() {
			require.Equal(t, message.Version, msg.Version, "an item of a stored list names its page")
			counts[k.Asset]++
			items++
			continue
		}
		shards++
		pg, err := b.ledger.GetPage(t.Context(), id, msg.Page)
		require.NoError(t, err)
		require.Equal(t, pg.Items[0].Name, k.Asset, "a page shard's key is its page's first item")
		for _, it := range pg.Items {
			counts[it.Name]++
		}
	}
	return counts, shards, items
}

// A large stored list fans out by its pages: past ExpandFrom items (1,000
// by default) each stored page goes out as one page shard message
// (version 4) instead of its items' messages; a job that declares
// ExpectedItems of ExpandFrom or more, or a bulk job, sends every page
// so; a negative ExpandFrom sends item messages only. Every item is
// covered by exactly one message.
func TestRunTimeLargeListGoesOutAsPageShards(t *testing.T) {
	t.Parallel()
	const n = 3000
	pages := (n + ledger.PageItems - 1) / ledger.PageItems // 47
	items := make([]baton.Item, n)
	for i := range items {
		items[i] = baton.Item{Name: fmt.Sprintf("i%05d", i)}
	}
	for name, tc := range map[string]struct {
		expected   int
		bulk       bool
		expandFrom int
		shards     int
		itemMsgs   int
	}{
		"past the threshold":       {shards: pages - 16, itemMsgs: 16 * ledger.PageItems},
		"declared large":           {expected: 5000, shards: pages},
		"bulk":                     {bulk: true, shards: pages},
		"threshold turned off":     {expandFrom: -1, itemMsgs: n},
		"declared, but turned off": {expected: 5000, expandFrom: -1, itemMsgs: n},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			j := runTimeJob("big", baton.ItemList(500, items...))
			j.ExpectedItems, j.Bulk = tc.expected, tc.bulk
			b := setup(t, j)
			c := b.coordinator("c1")
			c.ExpandFrom = tc.expandFrom
			sum, err := c.Run(t.Context(), coordinator.Trigger{Job: "big", At: t0})
			require.NoError(t, err)
			require.Equal(t, n, sum.Enqueued, "items sent, whatever the messages")
			require.Equal(t, tc.shards, sum.ShardMessages)
			counts, shards, itemMsgs := pageCoverage(t, b, sum.Run)
			require.Equal(t, tc.shards, shards)
			require.Equal(t, tc.itemMsgs, itemMsgs)
			require.Len(t, counts, n)
			for a, k := range counts {
				require.Equal(t, 1, k, a)
			}
			run, err := b.ledger.GetRun(t.Context(), "big", tick)
			require.NoError(t, err)
			require.Equal(t, ledger.RunFannedOut, run.State)
		})
	}
}

// A fan-out of page shards stopped by the deadline resumes from its
// checkpoint in the next invocation: every item is covered by exactly one
// page shard across the two, and the pages stored before the stop are
// read, not asked of the items function again.
func TestRunTimePageShardsResume(t *testing.T) {
	t.Parallel()
	const n = 2000
	items := make([]baton.Item, n)
	for i := range items {
		items[i] = baton.Item{Name: fmt.Sprintf("i%05d", i)}
	}
	list := baton.ItemList(100, items...)
	var calls int
	fn := func(ctx context.Context, req baton.ItemsRequest) (baton.ItemsPage, error) {
		calls++
		return list(ctx, req)
	}
	j := runTimeJob("big", fn)
	j.ExpectedItems = n
	b := setup(t, j)
	b.queue.BeforeFunc = func([]queue.Message) error { b.clock.Advance(time.Second); return nil }
	c := b.coordinator("c1")
	c.Checkpoint = 2 * ledger.PageItems // two pages per chunk: one send, one second

	sum, err := c.Run(t.Context(), coordinator.Trigger{Job: "big", At: t0, Deadline: t0.Add(3 * time.Second)})
	require.NoError(t, err)
	require.Equal(t, coordinator.StoppedDeadline, sum.Stopped)
	require.Equal(t, 2, sum.ShardMessages, "one chunk of two page shards before the deadline (less its margin)")
	require.Equal(t, 2*ledger.PageItems, sum.Cursor)
	callsBefore := calls

	sum2, err := b.coordinator("c2").Run(t.Context(), coordinator.Trigger{Job: "big", At: t0.Add(20 * time.Second), Deadline: b.clock.Now().Add(10 * time.Minute)})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeResumed, sum2.Outcome)
	pages := (n + ledger.PageItems - 1) / ledger.PageItems
	require.Equal(t, pages-2, sum2.ShardMessages)
	require.Equal(t, n-2*ledger.PageItems, sum2.Enqueued)
	require.LessOrEqual(t, calls-callsBefore, (n-2*ledger.PageItems)/100+2, "the resumed fan-out asks the function only past the stored pages")

	counts, shards, itemMsgs := pageCoverage(t, b, sum.Run)
	require.Equal(t, pages, shards)
	require.Zero(t, itemMsgs)
	require.Len(t, counts, n)
	for a, k := range counts {
		require.Equal(t, 1, k, a)
	}
}
