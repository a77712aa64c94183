package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
)

// writesPerItem is the least a new item costs: claim and complete.
const writesPerItem = 2

// rawWriters are the concurrencies the raw write reference tries; the
// best is the reference.
var rawWriters = []int{8, 64}

// endToEnd runs EndToEndItems zero-work items through coordinator, queue
// and consumers, against the raw conditional write rate ÷ writesPerItem.
func (r *Runner) endToEnd(ctx context.Context, t Target) error {
	env, err := r.open(ctx, t, "e2e")
	if err != nil {
		return err
	}
	defer env.Close()
	n := r.Config.EndToEndItems

	// The raw write rate is measured before and after, at each of
	// rawWriters; the reference is the better concurrency's mean.
	var rawSeq atomic.Int64
	raw := map[int][]float64{}
	rawWrites := func(ctx context.Context, _ int) (int, error) {
		return 1, env.RawWriteFunc(ctx, fmt.Sprintf("e2e-%d", rawSeq.Add(1)))
	}
	// The ledger alone: claim and complete new items, with no queue or
	// consumer around them.
	ledgerRun := ledger.RunID{Job: "ledger-alone", Nominal: time.Now().UTC().Truncate(time.Minute), Generation: 1}
	ledgerAlone := func(ctx context.Context, _ int) (int, error) {
		key := ledger.ItemKey{Run: ledgerRun, Asset: fmt.Sprintf("A%d", rawSeq.Add(1))}
		now := time.Now()
		it, err := env.Backend.Ledger.Claim(ctx, ledger.ClaimParams{Key: key, Owner: "bench", LeaseUntil: now.Add(time.Minute), Fence: 1, MaxAttempts: 5, Now: now})
		if err != nil {
			return 0, err
		}
		_, err = env.Backend.Ledger.Complete(ctx, ledger.CompleteParams{Key: key, Owner: "bench", Attempt: it.Attempt, Now: now})
		return 1, err
	}
	// A warm-up first, not measured: a server that just started (the
	// emulators compile their code paths as they first run them) would
	// hold the first measurements back, and with them the reference and
	// the ledger alone.
	for _, op := range []func(context.Context, int) (int, error){rawWrites, ledgerAlone} {
		if _, err := RunWorkers(ctx, rawWriters[len(rawWriters)-1], r.Config.Window/2, op); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	rawRate := func() error {
		for _, w := range rawWriters {
			l, err := RunWorkers(ctx, w, r.Config.Window, rawWrites)
			if err != nil {
				return fmt.Errorf("raw writes: %w", err)
			}
			r.logf("  raw conditional writes, %d writers: %.0f/s", w, l.PerSecond())
			raw[w] = append(raw[w], l.PerSecond())
		}
		return nil
	}
	if err := rawRate(); err != nil {
		return err
	}
	aloneW := rawWriters[0] // the faster raw concurrency so far
	for _, w := range rawWriters {
		if raw[w][0] > raw[aloneW][0] {
			aloneW = w
		}
	}

	// The ledger alone, as many at once as the best raw writers.
	alone, err := RunWorkers(ctx, aloneW, r.Config.Window, ledgerAlone)
	if err != nil {
		return fmt.Errorf("ledger alone: %w", err)
	}
	r.logf("  ledger alone, %d workers: %.0f claim + complete/s", aloneW, alone.PerSecond())

	proc := &sleeper{}
	j := syntheticJob("e2e", n, queue.MaxBatch, proc)
	e, err := exec.New(env.Backend, exec.Options{
		Catalog: baton.MustCatalog(j), Consumers: r.Config.EndToEndConsumers, BatchSize: queue.MaxBatch,
		BatchTimeout: time.Minute, Owner: "bench",
	})
	if err != nil {
		return err
	}
	pollers := consume(ctx, e, r.Config.EndToEndConsumers, queue.MaxBatch, n)
	defer pollers.Stop()
	env.Calls.Reset()
	start := time.Now()
	sum, err := e.Trigger(ctx, j.Name, start, false)
	if err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	last, err := pollers.Wait(ctx)
	if err != nil {
		return err
	}
	elapsed := last.Sub(start)
	pollers.Stop()
	calls := env.Calls.Snapshot()
	rate := float64(n) / elapsed.Seconds()
	r.logf("  %d items in %s (%.0f/s), fan-out took %s; statuses %v", n, elapsed.Round(time.Millisecond), rate,
		sum.Duration.Round(time.Millisecond), pollers.Statuses())
	if _, err := checkSucceeded(ctx, env.Plain.Ledger, sum.Run, n); err != nil {
		return err
	}
	if got := proc.calls.Load(); got != int64(n) {
		return fmt.Errorf("processor called %d times for %d items", got, n)
	}
	if err := rawRate(); err != nil {
		return err
	}
	best, bestW := 0.0, 0
	for _, w := range rawWriters {
		if m := median(raw[w]); m > best {
			best, bestW = m, w
		}
	}
	r.add(Row{
		Scenario: "4 end to end", Backend: t.Name,
		Figure: fmt.Sprintf("%s zero-work items, coordinator → queue → %d consumers × %d, items/s", number(float64(n)), r.Config.EndToEndConsumers, queue.MaxBatch),
		Value:  rate, Reference: best / writesPerItem, Unit: Rate, Goal: RatioAtLeast(0.5),
		RefText: fmt.Sprintf("raw conditional writes/s ÷ %d writes per item (%d writers, the faster of %v; mean of before and after)", writesPerItem, bestW, rawWriters),
		Note:    fmt.Sprintf("%.2f calls per item: %s", float64(Total(calls))/float64(n), perItem(calls, n)),
	}, Row{
		Scenario: "4 end to end", Backend: t.Name,
		Figure: fmt.Sprintf("of which the ledger alone: claim + complete of new items, %d at once, no queue, items/s", aloneW),
		Value:  alone.PerSecond(), Reference: best / writesPerItem, Unit: Rate,
		RefText: "as above",
	})
	return nil
}

// perItem lists calls per item by operation.
func perItem(calls map[string]int, n int) string {
	s := ""
	for _, part := range sortedOps(calls) {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%s %.2f", part, float64(calls[part])/float64(n))
	}
	return s
}
