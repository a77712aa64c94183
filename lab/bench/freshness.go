package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
)

// freshnessGoal is the longest a tick of the reference job may take to be
// all done.
const freshnessGoal = 2.5 // seconds

// referenceConsumers is the consumer count of the reference job's runs,
// as `baton run` uses by default.
const referenceConsumers = 4

// freshness measures tick → all done for the reference job at the
// configured latency, against the sequential loop it replaces, and for
// WideAssets assets against the ideal schedule of WideConsumers
// consumers.
func (r *Runner) freshness(ctx context.Context, t Target) error {
	if err := r.referenceJob(ctx, t); err != nil {
		return err
	}
	return r.wideJob(ctx, t)
}

func (r *Runner) referenceJob(ctx context.Context, t Target) error {
	env, err := r.open(ctx, t, "fx")
	if err != nil {
		return err
	}
	defer env.Close()
	lat := r.Config.Latency
	catalog := fx.Catalog(&fx.Options{Latency: lat})
	e, err := exec.New(env.Backend, exec.Options{Catalog: catalog, Consumers: referenceConsumers, Owner: "bench"})
	if err != nil {
		return err
	}
	items := len(fx.Assets) + 1 // and DXY
	pollers := consume(ctx, e, referenceConsumers, queue.MaxBatch, items)
	defer pollers.Stop()

	start := time.Now()
	sum, err := e.Trigger(ctx, fx.Name, start, false)
	if err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	if _, err := pollers.Wait(ctx); err != nil {
		return err
	}
	pollers.Stop()
	got, err := checkSucceeded(ctx, env.Plain.Ledger, sum.Run, items)
	if err != nil {
		return err
	}
	var done time.Time
	for _, it := range got {
		if it.FinishedAt.After(done) {
			done = it.FinishedAt
		}
	}
	tickToDone := done.Sub(start)
	r.logf("  fx: tick → all done %s", tickToDone.Round(time.Millisecond))

	// The loop it replaces: one asset after the other, same processor.
	p := fx.NewProcessor(&fx.Options{Latency: lat})
	run := ledger.RunID{Job: fx.Name, Nominal: sum.Nominal.Add(-time.Hour), Generation: 1}
	loopStart := time.Now()
	for _, a := range fx.Assets {
		task := baton.Task{Key: ledger.ItemKey{Run: run, Asset: a}, Asset: a, Nominal: run.Nominal, Attempt: 1, Fence: 1,
			Effects: effect.Bind(env.Plain.Effects, run.Job, run.Generation, 1, nil)}
		if _, err := p.Process(ctx, task); err != nil {
			return fmt.Errorf("sequential loop: %w", err)
		}
	}
	loop := time.Since(loopStart)
	r.logf("  fx: sequential loop %s", loop.Round(time.Millisecond))

	computed := time.Duration(len(fx.Assets)) * lat
	figure := fmt.Sprintf("tick → all done, reference job (%d assets + DXY, %s latency, %d consumers)",
		len(fx.Assets), lat, referenceConsumers)
	goal := AtMost(freshnessGoal*lat.Seconds()/1.6, Duration)
	r.add(
		Row{
			Scenario: "5 freshness", Backend: t.Name, Figure: figure,
			Value: tickToDone.Seconds(), Reference: computed.Seconds(), Unit: Duration, Goal: goal,
			RefText: fmt.Sprintf("sequential loop, computed: %d × %s", len(fx.Assets), lat),
		},
		Row{
			Scenario: "5 freshness", Backend: t.Name, Figure: figure,
			Value: tickToDone.Seconds(), Reference: loop.Seconds(), Unit: Duration, Goal: goal,
			RefText: "sequential loop, measured",
		},
	)
	return nil
}

func (r *Runner) wideJob(ctx context.Context, t Target) error {
	env, err := r.open(ctx, t, "wide")
	if err != nil {
		return err
	}
	defer env.Close()
	n, lat, slots := r.Config.WideAssets, r.Config.WideLatency, r.Config.WideConsumers
	// slots items at once: pollers × batch of 10, each batch processed
	// all at once.
	pollers := max(slots/queue.MaxBatch, 1)
	proc := &sleeper{latency: lat}
	j := syntheticJob("wide", n, queue.MaxBatch, proc)
	e, err := exec.New(env.Backend, exec.Options{
		Catalog: baton.MustCatalog(j), Consumers: pollers, BatchSize: queue.MaxBatch, Owner: "bench",
	})
	if err != nil {
		return err
	}
	c := consume(ctx, e, pollers, queue.MaxBatch, n)
	defer c.Stop()
	start := time.Now()
	sum, err := e.Trigger(ctx, j.Name, start, false)
	if err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	last, err := c.Wait(ctx)
	if err != nil {
		return err
	}
	c.Stop()
	if _, err := checkSucceeded(ctx, env.Plain.Ledger, sum.Run, n); err != nil {
		return err
	}
	elapsed := last.Sub(start)
	ideal := time.Duration(math.Ceil(float64(n)/float64(pollers*queue.MaxBatch))) * lat
	r.logf("  %d assets: tick → all done %s (ideal %s); statuses %v", n, elapsed.Round(time.Millisecond), ideal, c.Statuses())
	r.add(Row{
		Scenario: "5 freshness", Backend: t.Name,
		Figure: fmt.Sprintf("tick → all done, %s assets at %s, %d consumers (%d pollers × batches of %d)",
			number(float64(n)), lat, pollers*queue.MaxBatch, pollers, queue.MaxBatch),
		Value: elapsed.Seconds(), Reference: ideal.Seconds(), Unit: Duration,
		RefText: fmt.Sprintf("ideal: ⌈%d / %d⌉ × %s", n, pollers*queue.MaxBatch, lat),
	})
	return nil
}
