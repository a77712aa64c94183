package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
)

// RunTimeList runs one tick of a job whose n items come from a paged
// items function (baton.Job.Items, pages of 1,000) with a 64-byte payload
// each, end to end on tg: the fan-out's time, the pages it stored, the
// consumers' page reads per item (their membership checks) and the time
// until the run settled, with the Go heap in use after it.
func RunTimeList(ctx context.Context, tg Target, n int) ([]Row, error) {
	env, err := tg.OpenFunc(ctx, "runtime"+strconv.Itoa(n))
	if err != nil {
		return nil, err
	}
	defer env.Close()
	payload := make([]byte, 64)
	items := func(_ context.Context, req baton.ItemsRequest) (baton.ItemsPage, error) {
		from := 0
		if req.Cursor != "" {
			from, _ = strconv.Atoi(req.Cursor)
		}
		to := min(from+1000, n)
		page := baton.ItemsPage{Items: make([]baton.Item, 0, to-from)}
		for i := from; i < to; i++ {
			page.Items = append(page.Items, baton.Item{Name: fmt.Sprintf("it-%07d", i), Payload: payload})
		}
		if to < n {
			page.Next = strconv.Itoa(to)
		}
		return page, nil
	}
	cat, err := baton.NewCatalog(baton.Job{Name: "runtime", Schedule: "rate(1 hour)", Items: items,
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })})
	if err != nil {
		return nil, err
	}
	eng, err := exec.New(env.Plain, exec.Options{Catalog: cat, Consumers: 8, BatchSize: 10, BatchTimeout: 10 * time.Minute, RetryDelay: 100 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Consume(cctx) })
	defer func() { cancel(); wg.Wait() }()
	start := time.Now()
	sum, err := eng.Trigger(ctx, "runtime", start, false)
	if err != nil {
		return nil, err
	}
	fanout := time.Since(start)
	var run ledger.Run
	var peak uint64 // the Go heap in use, sampled while the run goes
	for {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
		run, err = eng.Backend().Ledger.GetRun(ctx, "runtime", sum.Nominal)
		if err == nil && run.State.Finished() {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	total := time.Since(start)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	pages := (n + ledger.PageItems - 1) / ledger.PageItems
	reads := eng.Consumer.Pages.Reads()
	scen := fmt.Sprintf("11 run-time list %d", n)
	rows := []Row{
		{Scenario: scen, Backend: tg.Name, Figure: "fan-out (items function, pages stored, messages sent)", Value: fanout.Seconds(), Unit: Count,
			Note: fmt.Sprintf("%d items, %d pages; %.0f items/s", sum.Enqueued, pages, float64(sum.Enqueued)/fanout.Seconds())},
		{Scenario: scen, Backend: tg.Name, Figure: "page reads per item by the consumers (membership checks)", Value: float64(reads) / float64(n), Unit: Count,
			Note: fmt.Sprintf("%d reads for %d pages", reads, pages)},
		{Scenario: scen, Backend: tg.Name, Figure: "trigger to settled, seconds", Value: total.Seconds(), Unit: Count,
			Note: fmt.Sprintf("%s; %d succeeded; Go heap in use after it %d MiB, at most %d MiB while it ran (sampled every 200 ms); process peak RSS %s",
				run.State, run.Succeeded, ms.HeapInuse>>20, peak>>20, ownPeakRSS())},
	}
	return rows, nil
}

// ownPeakRSS is this process's peak resident set (peakRSS), or "unknown".
func ownPeakRSS() string {
	n, err := peakRSS(os.Getpid())
	if err != nil {
		return "unknown"
	}
	return fmt.Sprintf("%d MiB", n>>20)
}
