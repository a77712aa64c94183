package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
)

// Priority measures priority classes on the embedded store: high urgent
// items (queue Priority 2, MaxConcurrency 6) queued with low bulk items
// (Priority 1, MaxConcurrency 2: a least share of 2/8), each item taking
// work of its own (a sleep of 5 ms, so that the slots and not the
// store's own time set each class's pace), all of them in one pool of 8
// consumers. The figures: the bulk class's part of the completions while
// both classes still had items (read against its share; goal at least
// 0.8 × share), and the urgent class's part of the first 10 % of
// completions.
func Priority(ctx context.Context, dir string, high, low int) ([]Row, error) {
	b, err := sqlitebackend.Open(ctx, filepath.Join(dir, "priority.db"))
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return PriorityOn(ctx, b, "sqlite", high, low)
}

// PriorityOn is Priority on backend b, named name in the rows: on an
// engine whose classes are separate queues (SQS: backend.Backend's
// CheapProbes false) each class keeps its own consumers, and the figures
// show what that gives.
func PriorityOn(ctx context.Context, b backend.Backend, name string, high, low int) ([]Row, error) {
	if b.JobQueueFunc == nil {
		return nil, fmt.Errorf("priority on %s: the backend opens no job queues", name)
	}
	var mu sync.Mutex
	var order []string
	job := func(name string, n, prio, conc int) baton.Job {
		return classJob(name, n, prio, conc, 5*time.Millisecond, func() {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
		})
	}
	e, err := exec.New(b, exec.Options{Catalog: baton.MustCatalog(job("urgent", high, 2, 6), job("bulk", low, 1, 2)), Consumers: 1, BatchSize: 10, BatchTimeout: time.Minute})
	if err != nil {
		return nil, err
	}
	now := time.Now()
	nominal := map[string]time.Time{}
	for _, j := range []string{"urgent", "bulk"} {
		sum, err := e.Trigger(ctx, j, now, false)
		if err != nil {
			return nil, err
		}
		nominal[j] = sum.Nominal
	}
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = e.Consume(cctx) })
	defer func() { cancel(); wg.Wait() }()
	start := time.Now()
	for _, j := range []string{"urgent", "bulk"} {
		wctx, stop := context.WithTimeout(ctx, 10*time.Minute)
		run, _, err := e.WaitSettled(wctx, j, nominal[j], 0)
		stop()
		if err != nil {
			return nil, err
		}
		if run.State != ledger.RunComplete {
			return nil, fmt.Errorf("priority: run of %s %s", j, run.State)
		}
	}
	took := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	var h, l int
	for _, c := range order {
		if h >= high || l >= low {
			break
		}
		if c == "urgent" {
			h++
		} else {
			l++
		}
	}
	first := max(len(order)/10, 1)
	urgentFirst := 0
	for _, c := range order[:first] {
		if c == "urgent" {
			urgentFirst++
		}
	}
	const share = 2.0 / 8
	pool := "one pool of 8 consumers, highest Priority first"
	if !b.CheapProbes {
		pool = "separate queues, 6 + 2 consumers"
	}
	note := fmt.Sprintf("%d urgent and %d bulk items, %s, all done in %s", high, low, pool, took.Round(time.Millisecond))
	return []Row{
		{Scenario: "12 priority", Backend: name, Figure: "bulk's part of the completions while both classes had items",
			Value: float64(l) / float64(h+l), Reference: share, RefText: "its share, 2/8", Unit: Count, Goal: RatioAtLeast(0.8),
			Note: fmt.Sprintf("%d urgent, %d bulk; %s", h, l, note)},
		{Scenario: "12 priority", Backend: name, Figure: "urgent's part of the first 10 % of completions",
			Value: float64(urgentFirst) / float64(first), Reference: 1 - share, RefText: "its share, 6/8", Unit: Count, Goal: RatioAtLeast(0.9),
			Note: fmt.Sprintf("%d of %d", urgentFirst, first)},
	}, nil
}

// PriorityBehind is the fairness case of a job service: urgent work that
// arrives behind a deep queue of bulk work. Fifty urgent items (Priority
// 2, MaxConcurrency 6) are first run alone on an idle pool, the
// reference; then depth bulk items (Priority 1, MaxConcurrency 2) are
// queued and under way, and the same fifty urgent items arrive behind
// them. The figure is the urgent run's trigger-to-settled time behind the
// bulk against its time alone: with priorities it should barely move,
// where one first-in first-out queue would make it wait for the whole
// backlog. Its jobs (late-urgent, late-bulk) have names of their own, so
// that it can follow PriorityOn on the same store.
func PriorityBehind(ctx context.Context, b backend.Backend, name string, depth int) ([]Row, error) {
	if b.JobQueueFunc == nil {
		return nil, fmt.Errorf("priority behind on %s: the backend opens no job queues", name)
	}
	const urgent, work = 50, 2 * time.Millisecond
	var done atomic.Int64 // bulk completions
	job := func(name string, n, prio, conc int) baton.Job {
		return classJob(name, n, prio, conc, work, func() {
			if name == "late-bulk" {
				done.Add(1)
			}
		})
	}
	e, err := exec.New(b, exec.Options{Catalog: baton.MustCatalog(job("late-urgent", urgent, 2, 6), job("late-bulk", depth, 1, 2)), Consumers: 1, BatchSize: 10, BatchTimeout: time.Minute})
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = e.Consume(cctx) })
	defer func() { cancel(); wg.Wait() }()
	// run triggers jobName's tick at and waits for it to settle.
	run := func(jobName string, at time.Time) (time.Duration, error) {
		start := time.Now()
		sum, err := e.Trigger(ctx, jobName, at, false)
		if err != nil {
			return 0, err
		}
		wctx, stop := context.WithTimeout(ctx, 10*time.Minute)
		defer stop()
		r, _, err := e.WaitSettled(wctx, jobName, sum.Nominal, 5*time.Millisecond)
		if err != nil {
			return 0, err
		}
		if r.State != ledger.RunComplete {
			return 0, fmt.Errorf("priority behind: run of %s %s", jobName, r.State)
		}
		return time.Since(start), nil
	}
	// Two ticks of the urgent job: the one before now alone, now's behind
	// the bulk (a tick in the future would be sent delayed until its time).
	now := time.Now()
	alone, err := run("late-urgent", now.Add(-time.Minute))
	if err != nil {
		return nil, err
	}
	bulkDone := make(chan error, 1)
	var bulkTook time.Duration
	go func() {
		var err error
		bulkTook, err = run("late-bulk", now)
		bulkDone <- err
	}()
	// Behind: the bulk run is under way (a tenth of it done) when the
	// urgent tick arrives.
	for done.Load() < int64(depth/10) {
		select {
		case err := <-bulkDone:
			return nil, fmt.Errorf("priority behind: the bulk run ended before the urgent work arrived: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	atDepth := depth - int(done.Load())
	behind, err := run("late-urgent", now)
	if err != nil {
		return nil, err
	}
	left := depth - int(done.Load())
	if err := <-bulkDone; err != nil {
		return nil, err
	}
	return []Row{{
		Scenario: "12 priority", Backend: name, Figure: fmt.Sprintf("%d urgent items behind a bulk queue: trigger to done", urgent),
		Value: behind.Seconds(), Reference: alone.Seconds(), RefText: "the same items alone, idle pool", Unit: Duration, Goal: RatioAtMost(2),
		Note: fmt.Sprintf("%d bulk items still queued when the urgent tick arrived, %d when it was done; the bulk run took %s", atDepth, left, bulkTook.Round(time.Millisecond)),
	}}, nil
}

// classJob is a job of n items on a job queue of its own, name, with the
// given MaxConcurrency and Priority: each item sleeps work, then calls
// done.
func classJob(name string, n, prio, conc int, work time.Duration, done func()) baton.Job {
	assets := make([]string, n)
	for i := range assets {
		assets[i] = fmt.Sprintf("%s-%d", name, i)
	}
	return baton.Job{
		Name: name, Schedule: "rate(1 minute)", Assets: assets,
		Queue: baton.JobQueue{Name: name, MaxConcurrency: conc, Priority: prio},
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) {
			time.Sleep(work)
			done()
			return []byte("ok"), nil
		}),
	}
}
