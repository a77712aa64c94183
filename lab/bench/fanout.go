package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// rawParallel are the batch-send concurrencies the raw reference tries;
// the best is the reference. 4 is what the coordinator's sender uses.
var rawParallel = []int{4, 16}

// fanOut measures the coordinator fanning out FanOutItems items, against
// raw batch sends of the same messages to the same endpoint, and counts
// the calls per item.
func (r *Runner) fanOut(ctx context.Context, t Target) error {
	env, err := r.open(ctx, t, "fanout")
	if err != nil {
		return err
	}
	defer env.Close()
	n := r.Config.FanOutItems
	raw := map[int][]float64{} // messages/s by sends in flight, one per round
	var rates []float64        // the coordinator's, one per round
	var calls map[string]int
	// Rounds alternate raw sends and the coordinator, so that a change of
	// load on the machine affects both; each side is read as the median of
	// its rounds, which a burst of load on the shared machine moves less
	// than a mean or a best.
	for round := range max(r.Config.FanOutRounds, 1) {
		j := syntheticJob(fmt.Sprintf("fanout-%d", round), n, 10, &sleeper{})
		e, err := exec.New(env.Backend, exec.Options{Catalog: baton.MustCatalog(j), BatchTimeout: r.Config.Timeout, Owner: "bench"})
		if err != nil {
			return err
		}
		// The raw messages are the coordinator's, byte for byte.
		run := ledger.RunID{Job: j.Name, Nominal: time.Now().UTC().Truncate(time.Minute), Generation: 1}
		msgs := make([]queue.Message, n)
		for i, a := range j.Assets {
			msgs[i] = message.New(ledger.ItemKey{Run: run, Asset: a}, 1, false).QueueMessage()
		}
		for _, p := range rawParallel {
			start := time.Now()
			if err := sendRaw(ctx, env, msgs, p); err != nil {
				return err
			}
			rate := float64(n) / time.Since(start).Seconds()
			r.logf("  round %d: raw batch sends, %d in flight: %.0f messages/s", round+1, p, rate)
			raw[p] = append(raw[p], rate)
		}

		env.Calls.Reset()
		start := time.Now()
		sum, err := e.Trigger(ctx, j.Name, start, false)
		elapsed := time.Since(start)
		if err != nil {
			return fmt.Errorf("coordinator: %w", err)
		}
		if sum.Outcome != coordinator.OutcomeOpened || sum.Cursor != n || sum.Stopped != "" {
			return fmt.Errorf("coordinator: %s, cursor %d of %d, stopped %q", sum.Outcome, sum.Cursor, n, sum.Stopped)
		}
		if round == 0 {
			calls = env.Calls.Snapshot()
		}
		got := float64(n) / elapsed.Seconds()
		r.logf("  round %d: coordinator, %d items in %s: %.0f/s", round+1, n, elapsed.Round(time.Millisecond), got)
		rates = append(rates, got)
	}
	best, bestP := 0.0, 0
	for _, p := range rawParallel {
		if m := median(raw[p]); m > best {
			best, bestP = m, p
		}
	}
	rate := median(rates)

	sends := 0
	for op, c := range calls {
		if op == "SendMessageBatch" || op == "queue.SendBatch" {
			sends += c
		}
	}
	total := Total(calls)
	minSends := math.Ceil(float64(n) / queue.MaxBatch)
	r.add(
		Row{
			Scenario: "3 fan-out", Backend: t.Name, Figure: fmt.Sprintf("coordinator fan-out of %s items, items/s", number(float64(n))),
			Value: rate, Reference: best, Unit: Rate, Goal: RatioAtLeast(0.8),
			RefText: fmt.Sprintf("raw batch sends of the same messages, %d in flight (the faster of %v)", bestP, rawParallel),
			Note:    fmt.Sprintf("medians of %d rounds", len(rates)),
		},
		Row{
			Scenario: "1 calls", Backend: t.Name, Figure: "fan-out, batch sends per item",
			Value: float64(sends) / float64(n), Reference: minSends / float64(n), Unit: Count,
			RefText: "1 send per 10 items",
		},
		Row{
			Scenario: "1 calls", Backend: t.Name, Figure: "fan-out, all calls per item",
			Value: float64(total) / float64(n), Reference: (minSends + 4) / float64(n), Unit: Count,
			RefText: "sends + acquire, open, fanned out, release", Note: breakdown(calls),
		},
	)
	return nil
}

// sendRaw sends msgs with env.RawSendFunc, in batches of queue.MaxBatch,
// parallel batches at once. The first error stops sending further batches
// (those in flight finish) and is returned.
func sendRaw(ctx context.Context, env *Env, msgs []queue.Message, parallel int) error {
	g, stop := errgroup.WithContext(ctx) // stop ends at the first error or with ctx; the sends keep ctx
	g.SetLimit(parallel)
	lo := 0
	for ; lo < len(msgs) && stop.Err() == nil; lo += queue.MaxBatch {
		b := msgs[lo:min(lo+queue.MaxBatch, len(msgs))]
		g.Go(func() error { return env.RawSendFunc(ctx, b) })
	}
	if err := g.Wait(); err != nil || lo >= len(msgs) {
		return err
	}
	return ctx.Err() // ctx ended before the last batches were sent
}
