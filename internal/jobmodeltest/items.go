// This file holds the Items group: jobs whose items are computed when
// their run opens (baton.Job.Items) and submissions of items. The list is
// stored with the run in pages, a fan-out stopped by a failing items
// function resumes from the stored pages without asking again for what
// they hold, every item runs once with its payload, consumers check
// membership with one page read per page rather than one per item, and
// the run settles by its consumers, while it still fans out too.
package jobmodeltest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
)

// Source is a list of n items named it-0000000, it-0000001, … with the
// payload {"i":<n>}, served in pages of PageSize by Func. FailAt, when
// above 0, makes the first call whose cursor reaches it fail once.
type Source struct {
	N, PageSize, FailAt int
	calls               atomic.Int64
	failed              atomic.Bool
}

// Name is item i's name.
func Name(i int) string { return fmt.Sprintf("it-%07d", i) }

// Payload is item i's payload.
func Payload(i int) []byte { return []byte(`{"i":` + strconv.Itoa(i) + `}`) }

// Calls is the number of calls of Func so far.
func (s *Source) Calls() int { return int(s.calls.Load()) }

// Func is the items function.
func (s *Source) Func(_ context.Context, req baton.ItemsRequest) (baton.ItemsPage, error) {
	s.calls.Add(1)
	from := 0
	if req.Cursor != "" {
		var err error
		if from, err = strconv.Atoi(req.Cursor); err != nil {
			return baton.ItemsPage{}, fmt.Errorf("bad cursor %q", req.Cursor)
		}
	}
	if s.FailAt > 0 && from >= s.FailAt && !s.failed.Swap(true) {
		return baton.ItemsPage{}, errors.New("source unavailable (on purpose)")
	}
	to := min(from+s.PageSize, s.N)
	page := baton.ItemsPage{Items: make([]baton.Item, 0, to-from)}
	for i := from; i < to; i++ {
		page.Items = append(page.Items, baton.Item{Name: Name(i), Payload: Payload(i)})
	}
	if to < s.N {
		page.Next = strconv.Itoa(to)
	}
	return page, nil
}

// processor returns the task's payload as its result and counts calls.
type processor struct {
	mu    sync.Mutex
	calls map[string]int
}

func (p *processor) Process(_ context.Context, t baton.Task) ([]byte, error) {
	p.mu.Lock()
	p.calls[t.Key.String()]++
	p.mu.Unlock()
	return append([]byte(nil), t.Payload...), nil
}

// RunTimeItems is the size of the run-time list of TestRunTimeItems and
// TestRunTimeListBesideDAG.
const RunTimeItems = 1000

// TestRunTimeItems runs one tick of a job of n = RunTimeItems run-time
// items, whose items function fails once half-way: the first trigger stops there with an
// error naming the function, the second resumes from the stored pages.
// It waits for the run to settle by its consumers and checks every item
// ran once with its payload, the items function was not asked again for
// the pages stored before the failure, and the consumers read each page
// at most a few times (it logs the extra reads per item). The job declares
// ExpectedItems 4n, so that on DynamoDB the run's items are partitioned
// by page (see ledger's "Item partitions"); it checks the run says so
// where the store partitions.
func TestRunTimeItems(t *testing.T, h Harness) {
	t.Parallel()
	b := h.open(t)
	n := RunTimeItems
	src := &Source{N: n, PageSize: 97, FailAt: n / 2}
	proc := &processor{calls: map[string]int{}}
	job := baton.Job{
		Name: "runtime", Schedule: "rate(1 minute)", Items: src.Func, Processor: proc,
		Limits: baton.Limits{ItemLease: 10 * time.Second, ClockSkew: 100 * time.Millisecond},
		// Declared four times too large: on DynamoDB the run is spread
		// over item partitions by page (4 of them at 1,000 items), which
		// a smaller list than declared leaves partly empty.
		ExpectedItems: 4 * n,
	}
	cat, err := baton.NewCatalog(job)
	require.NoError(t, err)
	eng := h.runtime(t, b, exec.Options{Catalog: cat, Consumers: 4, BatchSize: 10, BatchTimeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond})
	eng.Coordinator.Checkpoint = 200

	at := h.now()
	sum, err := eng.Trigger(t.Context(), "runtime", at, false)
	require.ErrorIs(t, err, coordinator.ErrItems, "the items function's failure stops the fan-out")
	require.ErrorContains(t, err, "source unavailable (on purpose)")
	require.Positive(t, sum.Enqueued, "the pages before the failure were sent")
	require.Less(t, sum.Enqueued, n)
	id := sum.Run
	run, err := b.Ledger.GetRun(t.Context(), "runtime", sum.Nominal)
	require.NoError(t, err)
	require.Equal(t, ledger.RunFanningOut, run.State, "the run stays open to resume")
	require.Equal(t, run.Partitions > 1, run.Pages, "a store that partitions the run does so by page")
	stored := run.Cursor / ledger.PageItems // pages sent whole before the failure
	callsBefore := src.Calls()

	defer consume(t, eng)()

	sum, err = eng.Trigger(t.Context(), "runtime", at, false)
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeResumed, sum.Outcome)
	require.Equal(t, id, sum.Run)
	// ExpectedItems of the expansion threshold or more: every page went
	// out as one page shard message, which consumers expand.
	resumedPages := (n - stored*ledger.PageItems + ledger.PageItems - 1) / ledger.PageItems
	require.Equal(t, resumedPages, sum.ShardMessages, "the resumed fan-out sends one page shard per page")
	// The resumed fan-out asks the function again only from the cursor of
	// the last stored page: at most the pages of the list after it.
	maxCalls := (n-stored*ledger.PageItems)/src.PageSize + 3
	require.LessOrEqual(t, src.Calls()-callsBefore, maxCalls, "the resumed fan-out does not read the stored pages' items again")

	run = waitFinished(t, b.Ledger, id)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, n, run.Succeeded)

	// Every item ran once, with its payload; page by page, memory flat.
	pages := (n + ledger.PageItems - 1) / ledger.PageItems
	seen := 0
	for p := 0; ; p++ {
		pg, err := b.Ledger.GetPage(t.Context(), id, p)
		require.NoError(t, err, "page %d", p)
		require.NotEmpty(t, pg.Items)
		items, err := b.Ledger.ListItemRange(t.Context(), id, pg.Items[0].Name, pg.Items[len(pg.Items)-1].Name)
		require.NoError(t, err)
		require.Len(t, items, len(pg.Items), "page %d is one shard of the run's records", p)
		for k, it := range items {
			i := seen + k
			require.Equal(t, Name(i), it.Key.Asset)
			require.Equal(t, ledger.ItemSucceeded, it.State, it.Key.Asset)
			require.Equal(t, Payload(i), it.Result, "%s got its payload", it.Key.Asset)
			proc.mu.Lock()
			calls := proc.calls[it.Key.String()]
			proc.mu.Unlock()
			require.Equal(t, 1, calls, "%s processed once", it.Key)
		}
		seen += len(items)
		if pg.Final {
			require.Equal(t, pages-1, p, "full pages of %d items", ledger.PageItems)
			break
		}
	}
	require.Equal(t, n, seen)

	reads := eng.Consumer.Pages.Reads()
	t.Logf("%d items, %d pages: %d page reads by the consumers, %.4f extra reads per item; item partitions %d (by page: %v)",
		n, pages, reads, float64(reads)/float64(n), run.Partitions, run.Pages)
	require.LessOrEqual(t, reads, int64(4*pages), "consumers read a page once per consumer at most, not once per item")
}

// TestSubmissionDeduped submits 200 items with payloads for a job of constant
// assets under a dedupe key, submits the same key again (deduped:
// the same run, nothing sent; with other items or payloads, it says
// they differ, and with the same ones in another order that they do not), and waits for the submitted run to settle
// by its consumers: every submitted item ran once with its payload, and
// no asset of the job ran for it.
func TestSubmissionDeduped(t *testing.T, h Harness) {
	t.Parallel()
	b := h.open(t)
	const n = 200
	proc := &processor{calls: map[string]int{}}
	job := baton.Job{
		Name: "orders", Schedule: "rate(1 hour)", Assets: []string{"nightly"}, Processor: proc,
		Limits: baton.Limits{ItemLease: 10 * time.Second, ClockSkew: 100 * time.Millisecond},
	}
	cat, err := baton.NewCatalog(job)
	require.NoError(t, err)
	eng := h.runtime(t, b, exec.Options{Catalog: cat, Consumers: 4, BatchSize: 10, BatchTimeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond})
	defer consume(t, eng)()

	items := make([]baton.Item, n)
	for i := range items {
		items[n-1-i] = baton.Item{Name: Name(i), Payload: Payload(i)} // any order
	}
	sum, err := eng.Coordinator.Submit(t.Context(), coordinator.Submission{Job: "orders", Key: "req-7", Items: items})
	require.NoError(t, err)
	require.False(t, sum.Deduped)
	require.Equal(t, n, sum.Enqueued)
	id := sum.Run
	require.Equal(t, "orders+req-7#1", id.String())

	again, err := eng.Coordinator.Submit(t.Context(), coordinator.Submission{Job: "orders", Key: "req-7", Items: items[:1]})
	require.NoError(t, err)
	require.True(t, again.Deduped, "the same key opens nothing new")
	require.True(t, again.PayloadDiffers, "other items: the run's were kept, these not used")
	require.Equal(t, id, again.Run)
	require.Zero(t, again.Enqueued)
	same := slices.Clone(items)
	slices.Reverse(same) // the same list in another order
	again, err = eng.Coordinator.Submit(t.Context(), coordinator.Submission{Job: "orders", Key: "req-7", Items: same})
	require.NoError(t, err)
	require.True(t, again.Deduped)
	require.False(t, again.PayloadDiffers, "the same items")
	changed := slices.Clone(items)
	changed[0].Payload = []byte(`{"i":"changed"}`)
	again, err = eng.Coordinator.Submit(t.Context(), coordinator.Submission{Job: "orders", Key: "req-7", Items: changed})
	require.NoError(t, err)
	require.True(t, again.PayloadDiffers, "one payload changed")

	run := waitFinished(t, b.Ledger, id)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, n, run.Succeeded)
	seen := 0
	for p := 0; ; p++ {
		pg, err := b.Ledger.GetPage(t.Context(), id, p)
		require.NoError(t, err)
		recs, err := b.Ledger.ListItemRange(t.Context(), id, pg.Items[0].Name, pg.Items[len(pg.Items)-1].Name)
		require.NoError(t, err)
		require.Len(t, recs, len(pg.Items))
		for k, it := range recs {
			require.Equal(t, Name(seen+k), it.Key.Asset)
			require.Equal(t, Payload(seen+k), it.Result)
		}
		seen += len(recs)
		if pg.Final {
			break
		}
	}
	require.Equal(t, n, seen)
	proc.mu.Lock()
	defer proc.mu.Unlock()
	require.Len(t, proc.calls, n, "each submitted item ran, and nothing else")
	for k, c := range proc.calls {
		require.Equal(t, 1, c, k)
	}
}

// TestSubmissionContention submits one dedupe key with the same 200 items
// from 8 callers at once: every caller gets the same run and no
// error (a caller that finds another opening it waits for it), exactly
// one of them opens the run, the items are sent once in all (the callers'
// Enqueued add up to 200), and the run settles with every item run once.
func TestSubmissionContention(t *testing.T, h Harness) {
	t.Parallel()
	b := h.open(t)
	const n = 200
	const callers = 8
	proc := &processor{calls: map[string]int{}}
	job := baton.Job{
		Name: "orders", Schedule: "rate(1 hour)", Assets: []string{"nightly"}, Processor: proc,
		Limits: baton.Limits{ItemLease: 10 * time.Second, ClockSkew: 100 * time.Millisecond},
	}
	cat, err := baton.NewCatalog(job)
	require.NoError(t, err)
	eng := h.runtime(t, b, exec.Options{Catalog: cat, Consumers: 4, BatchSize: 10, BatchTimeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond})
	eng.Coordinator.ContentionWait = time.Minute // the emulators may be slow; the waiters answer once the run is fanned out
	items := make([]baton.Item, n)
	for i := range items {
		items[i] = baton.Item{Name: Name(i), Payload: Payload(i)}
	}
	sums := make([]coordinator.Summary, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range callers {
		wg.Go(func() {
			<-start
			sums[i], errs[i] = eng.Coordinator.Submit(t.Context(), coordinator.Submission{Job: "orders", Key: "burst", Items: items})
		})
	}
	close(start)
	wg.Wait()
	opened, enqueued := 0, 0
	for i := range callers {
		require.NoError(t, errs[i], "caller %d", i)
		require.Equal(t, "orders+burst#1", sums[i].Run.String(), "caller %d: %+v", i, sums[i])
		if !sums[i].Deduped {
			opened++
			require.Equal(t, coordinator.OutcomeOpened, sums[i].Outcome, "caller %d", i)
		} else {
			require.Equal(t, coordinator.OutcomeAlreadyFannedOut, sums[i].Outcome, "caller %d waited for the run to be fanned out: %+v", i, sums[i])
		}
		enqueued += sums[i].Enqueued
	}
	require.Equal(t, 1, opened, "exactly one caller opened the run")
	require.Equal(t, n, enqueued, "the items were sent once in all")

	defer consume(t, eng)()
	run := waitFinished(t, b.Ledger, sums[0].Run)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, n, run.Succeeded)
	proc.mu.Lock()
	defer proc.mu.Unlock()
	require.Len(t, proc.calls, n)
	for k, c := range proc.calls {
		require.Equal(t, 1, c, k)
	}
}

// TestRunTimeListSettlesDuringFanOut runs a run-time list of 5 groups of pages' worth
// of items (more than ledger.MarkGroup pages) whose items function gives
// the next page only once every item sent so far has ended: the items
// end while the run still fans out. The run settles by itself (its
// consumers mark the shards as they end, full groups climb, and the pass
// after the fan-out finishes it), with no later trigger.
func TestRunTimeListSettlesDuringFanOut(t *testing.T, h Harness) {
	t.Parallel()
	b := h.open(t)
	const pageSize = 64 * 16 // sixteen stored pages per call
	const n = pageSize * 5   // 80 stored pages: two groups of marks
	var processed atomic.Int64
	proc := baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) {
		processed.Add(1)
		return nil, nil
	})
	src := &Source{N: n, PageSize: pageSize}
	items := func(ctx context.Context, req baton.ItemsRequest) (baton.ItemsPage, error) {
		if req.Cursor != "" {
			from, _ := strconv.Atoi(req.Cursor)
			// Wait until everything sent before this page has ended (the
			// previous page of the function is stored and sent by now,
			// but for its last 64-item stored page, kept back with it).
			want := int64(from - ledger.PageItems)
			for processed.Load() < want {
				select {
				case <-ctx.Done():
					return baton.ItemsPage{}, ctx.Err()
				case <-time.After(5 * time.Millisecond):
				}
			}
		}
		return src.Func(ctx, req)
	}
	cat, err := baton.NewCatalog(baton.Job{Name: "slowlist", Schedule: "rate(1 hour)", Items: items, Processor: proc,
		Limits: baton.Limits{ItemLease: 10 * time.Second, ClockSkew: 100 * time.Millisecond}})
	require.NoError(t, err)
	eng := h.runtime(t, b, exec.Options{Catalog: cat, Consumers: 4, BatchSize: 10, BatchTimeout: 2 * time.Minute, RetryDelay: 100 * time.Millisecond})
	eng.Coordinator.Checkpoint = 64
	defer consume(t, eng)()
	sum, err := eng.Trigger(t.Context(), "slowlist", h.now(), false)
	require.NoError(t, err)
	require.Equal(t, n, sum.Enqueued)
	run := waitFinished(t, b.Ledger, sum.Run)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, n, run.Succeeded)
}
