// Package itemstest runs jobs whose items are computed when their run
// opens (baton.Job.Items) end to end on a backend (coordinator, poller,
// consumers), the same way on every engine: the list is stored with the
// run in pages, a fan-out stopped by a failing items function resumes
// from the stored pages without asking again for what they hold, every
// item runs once with its payload, consumers check membership with one
// page read per page rather than one per item, and the run settles by
// its consumers.
package itemstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/ratelimit"
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

// Run runs one tick of a job of n run-time items on b, whose items
// function fails once half-way: the first trigger stops there with an
// error naming the function, the second resumes from the stored pages.
// It waits for the run to settle by its consumers and checks every item
// ran once with its payload, the items function was not asked again for
// the pages stored before the failure, and the consumers read each page
// at most a few times (it logs the extra reads per item). The job declares
// ExpectedItems 4n, so that on DynamoDB the run's items are partitioned
// by page (see ledger's "Item partitions"); it checks the run says so
// where the store partitions.
func Run(t *testing.T, b backend.Backend, n int) {
	t.Helper()
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
	eng, err := exec.New(b, exec.Options{Catalog: cat, Consumers: 4, BatchSize: 10, BatchTimeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond})
	require.NoError(t, err)
	eng.Coordinator.Checkpoint = 200

	at := time.Now()
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

// waitFinished polls the run until it is finished, with a bound; it never
// settles the run itself (the consumers must).
// consume runs eng's consumers until the returned func, which stops them
// and waits for their batches in flight.
func consume(t *testing.T, eng *exec.Runtime) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Consume(ctx) })
	return func() { cancel(); wg.Wait() }
}

func waitFinished(t *testing.T, l ledger.Store, id ledger.RunID) ledger.Run {
	t.Helper()
	ctx, stop := context.WithTimeout(t.Context(), 90*time.Second)
	defer stop()
	for {
		r, err := ledger.GetRunOf(ctx, l, id)
		if err == nil && r.State.Finished() {
			return r
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run %s not finished: %+v (%v)", id, r, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// RunSubmission submits n items with payloads for a job of constant
// assets on b under a dedupe key, submits the same key again (deduped:
// the same run, nothing sent; with other items or payloads, it says
// they differ, and with the same ones in another order that they do not), and waits for the submitted run to settle
// by its consumers: every submitted item ran once with its payload, and
// no asset of the job ran for it.
func RunSubmission(t *testing.T, b backend.Backend, n int) {
	t.Helper()
	proc := &processor{calls: map[string]int{}}
	job := baton.Job{
		Name: "orders", Schedule: "rate(1 hour)", Assets: []string{"nightly"}, Processor: proc,
		Limits: baton.Limits{ItemLease: 10 * time.Second, ClockSkew: 100 * time.Millisecond},
	}
	cat, err := baton.NewCatalog(job)
	require.NoError(t, err)
	eng, err := exec.New(b, exec.Options{Catalog: cat, Consumers: 4, BatchSize: 10, BatchTimeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond})
	require.NoError(t, err)
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

// RunSubmissionContention submits one dedupe key with the same n items
// from 8 callers at once on b: every caller gets the same run and no
// error (a caller that finds another opening it waits for it), exactly
// one of them opens the run, the items are sent once in all (the callers'
// Enqueued add up to n), and the run settles with every item run once.
func RunSubmissionContention(t *testing.T, b backend.Backend, n int) {
	t.Helper()
	const callers = 8
	proc := &processor{calls: map[string]int{}}
	job := baton.Job{
		Name: "orders", Schedule: "rate(1 hour)", Assets: []string{"nightly"}, Processor: proc,
		Limits: baton.Limits{ItemLease: 10 * time.Second, ClockSkew: 100 * time.Millisecond},
	}
	cat, err := baton.NewCatalog(job)
	require.NoError(t, err)
	eng, err := exec.New(b, exec.Options{Catalog: cat, Consumers: 4, BatchSize: 10, BatchTimeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond})
	require.NoError(t, err)
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

// parentRecorder records each task's Parent by item key.
type parentRecorder struct {
	mu      sync.Mutex
	parents map[string]baton.RunID
	fail    string // an asset failed permanently
}

func (p *parentRecorder) Process(_ context.Context, t baton.Task) ([]byte, error) {
	p.mu.Lock()
	p.parents[t.Key.String()] = t.Parent
	p.mu.Unlock()
	if t.Asset == p.fail {
		return nil, baton.Permanent(errors.New("failed on purpose"))
	}
	return []byte("ok"), nil
}

// RunChain runs a tick of "up" on b, whose finish starts a run of
// "down" (baton.Chain), and of "upfail", which ends partial: its chain to
// "downcomplete" (complete only) starts nothing, its chain to
// "downpartial" (OnPartial) starts a run. The chained runs carry their
// parent's id in Task.Parent, and settling the parents again (twice)
// starts nothing more: one chained run per parent run.
func RunChain(t *testing.T, b backend.Backend) {
	t.Helper()
	rec := &parentRecorder{parents: map[string]baton.RunID{}, fail: "f2"}
	lim := baton.Limits{ItemLease: 10 * time.Second, ClockSkew: 100 * time.Millisecond}
	job := func(name string, assets []string, chains ...baton.Chain) baton.Job {
		return baton.Job{Name: name, Schedule: "rate(1 hour)", Assets: assets, Processor: rec, Limits: lim, Chains: chains}
	}
	cat, err := baton.NewCatalog(
		job("up", []string{"u1", "u2"}, baton.Chain{Job: "down"}),
		job("down", []string{"d1", "d2", "d3"}),
		job("upfail", []string{"f1", "f2"}, baton.Chain{Job: "downcomplete"}, baton.Chain{Job: "downpartial", OnPartial: true}),
		job("downcomplete", []string{"c1"}),
		job("downpartial", []string{"p1"}),
	)
	require.NoError(t, err)
	eng, err := exec.New(b, exec.Options{Catalog: cat, Consumers: 2, BatchSize: 10, BatchTimeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond})
	require.NoError(t, err)
	defer consume(t, eng)()

	at := time.Now()
	up, err := eng.Trigger(t.Context(), "up", at, false)
	require.NoError(t, err)
	upfail, err := eng.Trigger(t.Context(), "upfail", at, false)
	require.NoError(t, err)
	upRun := waitFinished(t, b.Ledger, up.Run)
	require.Equal(t, ledger.RunComplete, upRun.State)
	failRun := waitFinished(t, b.Ledger, upfail.Run)
	require.Equal(t, ledger.RunPartial, failRun.State)

	down := ledger.RunID{Job: "down", Submission: baton.ChainKey(up.Run), Generation: 1}
	downRun := waitFinished(t, b.Ledger, down)
	require.Equal(t, ledger.RunComplete, downRun.State)
	require.Equal(t, 3, downRun.Succeeded)
	partial := ledger.RunID{Job: "downpartial", Submission: baton.ChainKey(upfail.Run), Generation: 1}
	require.Equal(t, ledger.RunComplete, waitFinished(t, b.Ledger, partial).State)
	_, err = ledger.GetRunOf(t.Context(), b.Ledger, ledger.RunID{Job: "downcomplete", Submission: baton.ChainKey(upfail.Run), Generation: 1})
	require.ErrorIs(t, err, ledger.ErrNotFound, "a partial run starts no complete-only chain")

	// Settling the parents again starts nothing more.
	for range 2 {
		for _, r := range []ledger.Run{upRun, failRun} {
			require.NoError(t, eng.Coordinator.StartChains(t.Context(), r))
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, a := range []string{"d1", "d2", "d3"} {
		require.Equal(t, up.Run, rec.parents[ledger.ItemKey{Run: down, Asset: a}.String()], "%s carries its parent", a)
	}
	require.Equal(t, upfail.Run, rec.parents[ledger.ItemKey{Run: partial, Asset: "p1"}.String()])
	require.Equal(t, baton.RunID{}, rec.parents[ledger.ItemKey{Run: up.Run, Asset: "u1"}.String()], "a tick's run has no parent")
	chained := 0
	for k := range rec.parents {
		if strings.Contains(k, "+after-") {
			chained++
		}
	}
	require.Equal(t, 4, chained, "each chained item ran once: one run per chain and parent")
}

// RunSummary runs the fan-in over a run-time list: a tick of "feeds",
// whose 25 items are computed when the run opens, chains to "summary",
// whose one item reads every feed's result through Task.ParentResults (the
// engine the task runs on, no second client) and sums them. The summary
// sees all 25 results, in name order, and a run that does not exist is
// ErrNoRun.
func RunSummary(t *testing.T, b backend.Backend) {
	t.Helper()
	const feeds = 25
	items := make([]baton.Item, feeds)
	want := 0
	for i := range items {
		items[i] = baton.Item{Name: fmt.Sprintf("feed-%02d", i), Payload: []byte(strconv.Itoa(i + 1))}
		want += i + 1
	}
	lim := baton.Limits{ItemLease: 10 * time.Second, ClockSkew: 100 * time.Millisecond}
	fetch := baton.ProcessorFunc(func(_ context.Context, t baton.Task) ([]byte, error) {
		return t.Payload, nil // the feed's "size"
	})
	summary := baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
		sum, n, last := 0, 0, ""
		for r, err := range t.ParentResults(ctx) {
			if err != nil {
				return nil, err
			}
			if r.State != "SUCCEEDED" || r.Item <= last {
				return nil, baton.Permanent(fmt.Errorf("result %s: state %s after %q", r.Item, r.State, last))
			}
			v, err := strconv.Atoi(string(r.Result))
			if err != nil {
				return nil, baton.Permanent(fmt.Errorf("result %s: %w", r.Item, err))
			}
			sum, n, last = sum+v, n+1, r.Item
		}
		missing := "read"
		for _, err := range t.Runs.Results(ctx, baton.RunID{Job: "feeds", Submission: "never", Generation: 1}) {
			if errors.Is(err, baton.ErrNoRun) {
				missing = "no such run"
			}
		}
		return fmt.Appendf(nil, "%d items, sum %d; a missing run: %s", n, sum, missing), nil
	})
	cat, err := baton.NewCatalog(
		baton.Job{Name: "feeds", Schedule: "rate(1 hour)", Items: baton.ItemList(10, items...), Processor: fetch, Limits: lim,
			Chains: []baton.Chain{{Job: "summary"}}},
		baton.Job{Name: "summary", Schedule: "rate(1 day)", Assets: []string{"total"}, Processor: summary, Limits: lim},
	)
	require.NoError(t, err)
	eng, err := exec.New(b, exec.Options{Catalog: cat, Consumers: 2, BatchSize: 10, BatchTimeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond})
	require.NoError(t, err)
	defer consume(t, eng)()

	up, err := eng.Trigger(t.Context(), "feeds", time.Now(), false)
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, waitFinished(t, b.Ledger, up.Run).State)
	down := ledger.RunID{Job: "summary", Submission: baton.ChainKey(up.Run), Generation: 1}
	require.Equal(t, ledger.RunComplete, waitFinished(t, b.Ledger, down).State)
	total, err := b.Ledger.GetItem(t.Context(), ledger.ItemKey{Run: down, Asset: "total"})
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("%d items, sum %d; a missing run: no such run", feeds, want), string(total.Result))
}

// RunRateLimit runs a tick of a job of 40 items on b whose every item
// takes a start of a shared limit of 10 per 250 ms before it starts
// (PerItem), and whose processor takes one more of a second limit through
// Task.Wait: the items all succeed, spread over at least three windows of
// each limit, and Task.Wait of a limit the job does not declare fails.
func RunRateLimit(t *testing.T, b backend.Backend) {
	t.Helper()
	const per = 250 * time.Millisecond
	var mu sync.Mutex
	var starts, calls []time.Time
	var undeclared error
	proc := baton.ProcessorFunc(func(ctx context.Context, task baton.Task) ([]byte, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		if err := task.Wait(ctx, "partner-api"); err != nil {
			return nil, err
		}
		mu.Lock()
		calls = append(calls, time.Now())
		if task.Asset == "r00" {
			undeclared = task.Wait(ctx, "nope")
		}
		mu.Unlock()
		return nil, nil
	})
	assets := make([]string, 40)
	for i := range assets {
		assets[i] = fmt.Sprintf("r%02d", i)
	}
	cat, err := baton.NewCatalog(baton.Job{
		Name: "limited", Schedule: "rate(1 hour)", Assets: assets, Processor: proc,
		RateLimits: []baton.RateLimit{
			{Name: "item-starts", Starts: 10, Per: per, PerItem: true},
			{Name: "partner-api", Starts: 10, Per: per},
		},
		Limits: baton.Limits{ItemLease: 10 * time.Second, ClockSkew: 100 * time.Millisecond},
	})
	require.NoError(t, err)
	eng, err := exec.New(b, exec.Options{Catalog: cat, Consumers: 4, BatchSize: 10, BatchTimeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond})
	require.NoError(t, err)
	defer consume(t, eng)()

	sum, err := eng.Trigger(t.Context(), "limited", time.Now(), false)
	require.NoError(t, err)
	run := waitFinished(t, b.Ledger, sum.Run)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, 40, run.Succeeded)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, starts, 40)
	for name, ts := range map[string][]time.Time{"item-starts": starts, "partner-api": calls} {
		first, last := ts[0], ts[0]
		perWindow := map[int64]int{}
		for _, at := range ts {
			first, last = minTime(first, at), maxTime(last, at)
			perWindow[at.UnixNano()/int64(per)]++
		}
		// 40 starts of 10 per window take four windows at least: the first
		// and the last are three windows apart, less the first's offset.
		require.GreaterOrEqual(t, last.Sub(first), 2*per, "%s: 40 starts spread over four windows", name)
		t.Logf("%s: 40 starts over %s, %d windows", name, last.Sub(first).Round(time.Millisecond), len(perWindow))
	}
	require.ErrorContains(t, undeclared, `declares no rate limit "nope"`)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// RunPriorities runs two priority classes on b, each a job queue with its
// own concurrency share (baton.JobQueue: on AWS a queue and its
// event-source mapping's MaximumConcurrency, declared in the template; on
// the embedded store a pool of consumers per queue): "bulk" floods its
// class with 600 items while "urgent", in a class of 2 consumers of 8,
// has 60. Under the sustained high-volume load the low-volume class still
// progresses at its share: all its items end while the flood is still
// running, at a rate of at least half its share of the items finished
// meanwhile.
func RunPriorities(t *testing.T, b backend.Backend) {
	t.Helper()
	var mu sync.Mutex
	done := map[string][]time.Time{}
	proc := baton.ProcessorFunc(func(ctx context.Context, task baton.Task) ([]byte, error) {
		time.Sleep(5 * time.Millisecond) // work, not a wait for time to pass
		mu.Lock()
		done[task.Key.Run.Job] = append(done[task.Key.Run.Job], time.Now())
		mu.Unlock()
		return nil, nil
	})
	lim := baton.Limits{ItemLease: 10 * time.Second, ClockSkew: 100 * time.Millisecond}
	cat, err := baton.NewCatalog(
		baton.Job{Name: "bulk", Schedule: "rate(1 hour)", Assets: assetNames("b", 600), Processor: proc, Limits: lim,
			Queue: baton.JobQueue{Name: "class-bulk", MaxConcurrency: 6}},
		baton.Job{Name: "urgent", Schedule: "rate(1 hour)", Assets: assetNames("u", 60), Processor: proc, Limits: lim,
			Queue: baton.JobQueue{Name: "class-urgent", MaxConcurrency: 2}},
	)
	require.NoError(t, err)
	eng, err := exec.New(b, exec.Options{Catalog: cat, Consumers: 1, BatchSize: 10, BatchTimeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond})
	require.NoError(t, err)
	at := time.Now()
	bulk, err := eng.Trigger(t.Context(), "bulk", at, false)
	require.NoError(t, err)
	urgent, err := eng.Trigger(t.Context(), "urgent", at, false)
	require.NoError(t, err)
	defer consume(t, eng)()
	u := waitFinished(t, b.Ledger, urgent.Run)
	require.Equal(t, 60, u.Succeeded)
	bk := waitFinished(t, b.Ledger, bulk.Run)
	require.Equal(t, 600, bk.Succeeded)

	mu.Lock()
	defer mu.Unlock()
	lastUrgent := slices.MaxFunc(done["urgent"], func(a, b time.Time) int { return a.Compare(b) })
	lastBulk := slices.MaxFunc(done["bulk"], func(a, b time.Time) int { return a.Compare(b) })
	require.True(t, lastUrgent.Before(lastBulk), "the urgent class ended while the flood still ran")
	bulkMeanwhile := 0
	for _, at := range done["bulk"] {
		if !at.After(lastUrgent) {
			bulkMeanwhile++
		}
	}
	share := 60.0 / float64(60+bulkMeanwhile)
	t.Logf("until the urgent class ended: 60 urgent and %d bulk items (urgent's share of the work: %.0f%%, of the consumers: 25%%)", bulkMeanwhile, share*100)
	require.GreaterOrEqual(t, share, 0.125, "the low-volume class got at least half its share")
}

// RunSettleDuringFanOut runs a run-time list of 5 groups of pages' worth
// of items (more than ledger.MarkGroup pages) whose items function gives
// the next page only once every item sent so far has ended: the items
// end while the run still fans out. The run settles by itself (its
// consumers mark the shards as they end, full groups climb, and the pass
// after the fan-out finishes it), with no later trigger.
func RunSettleDuringFanOut(t *testing.T, b backend.Backend) {
	t.Helper()
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
	eng, err := exec.New(b, exec.Options{Catalog: cat, Consumers: 4, BatchSize: 10, BatchTimeout: 2 * time.Minute, RetryDelay: 100 * time.Millisecond})
	require.NoError(t, err)
	eng.Coordinator.Checkpoint = 64
	defer consume(t, eng)()
	sum, err := eng.Trigger(t.Context(), "slowlist", time.Now(), false)
	require.NoError(t, err)
	require.Equal(t, n, sum.Enqueued)
	run := waitFinished(t, b.Ledger, sum.Run)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, n, run.Succeeded)
}

// RunInFlightLimit runs a tick of 24 items on b whose every item holds a
// slot of a shared limit of 3 in flight (PerItem), held while it works
// and given back when it ends; its processor asks for the same limit
// again through Task.Wait, which takes nothing more. With 8 consumers at
// most 3 items are ever in their processor at once, every item succeeds,
// and afterwards every slot is free.
func RunInFlightLimit(t *testing.T, b backend.Backend) {
	t.Helper()
	const slots = 3
	gpu := fmt.Sprintf("gpu-%d", time.Now().UnixNano()) // the store may be shared with other tests
	var cur, peak atomic.Int64
	proc := baton.ProcessorFunc(func(ctx context.Context, task baton.Task) ([]byte, error) {
		if err := task.Wait(ctx, gpu); err != nil { // held already: returns at once
			return nil, err
		}
		n := cur.Add(1)
		defer cur.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		select { // work long enough for the consumers to overlap
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(60 * time.Millisecond):
		}
		return nil, nil
	})
	assets := make([]string, 24)
	for i := range assets {
		assets[i] = fmt.Sprintf("g%02d", i)
	}
	cat, err := baton.NewCatalog(baton.Job{
		Name: "inflight", Schedule: "rate(1 hour)", Assets: assets, Processor: proc,
		RateLimits: []baton.RateLimit{{Name: gpu, InFlight: slots, PerItem: true}},
		Limits:     baton.Limits{ItemLease: 10 * time.Second, ClockSkew: 100 * time.Millisecond},
	})
	require.NoError(t, err)
	eng, err := exec.New(b, exec.Options{Catalog: cat, Consumers: 8, BatchSize: 1, BatchTimeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond})
	require.NoError(t, err)
	defer consume(t, eng)()

	sum, err := eng.Trigger(t.Context(), "inflight", time.Now(), false)
	require.NoError(t, err)
	run := waitFinished(t, b.Ledger, sum.Run)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, 24, run.Succeeded)
	require.LessOrEqual(t, peak.Load(), int64(slots), "never more items in flight than the limit")
	t.Logf("in flight at most %d of %d", peak.Load(), slots)
	now := time.Now()
	for s := range slots {
		require.NoError(t, b.RateLimits.Hold(t.Context(), ratelimit.SlotParams{Name: gpu, Slot: s, Holder: "probe", Until: now.Add(time.Second), Now: now}),
			"slot %d was given back when its item ended", s)
	}
}
