package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/lab/ddbthrottle"
)

// scale runs the scale scenario on t: role processes on the embedded
// store, the emulators behind the throttling proxy for an AWS target.
func (r *Runner) scale(ctx context.Context, t Target) error {
	switch {
	case t.dir != "":
		return r.sqliteScale(ctx, t)
	case t.aws != nil:
		if err := r.awsScale(ctx, t); err != nil {
			return err
		}
		return r.contended(ctx, t)
	}
	return nil
}

// throttled starts a DynamoDB throttling proxy with DynamoDB's limits in
// front of t's DynamoDB endpoint, and returns it with the target's
// endpoints through it.
func throttled(t Target) (*ddbthrottle.Proxy, awsEndpoints, func(), error) {
	ep := *t.aws
	p, err := ddbthrottle.New(aws.ToString(ep.ddb.BaseEndpoint), nil)
	if err != nil {
		return nil, ep, nil, err
	}
	srv := httptest.NewServer(p)
	ep.ddb = ep.ddb.Copy()
	ep.ddb.BaseEndpoint = aws.String(srv.URL)
	return p, ep, srv.Close, nil
}

// awsRun is what one scale run on the emulators measured.
type awsRun struct {
	n                  int
	toEnqueued, toDone time.Duration
	finished           bool // every item succeeded and the run settled
	done               int  // items succeeded
	raw                float64
	stats              ddbthrottle.Stats
	calls              map[string]int
	shardMessages      int
	batches            int
	// itemKeys is the number of item partition keys written
	// (ITEMS#<run>#P<p>), hottestItem the hottest of them.
	itemKeys          int
	hottestItem       ddbthrottle.PartitionStats
	invocations       int // coordinator invocations of the fan-out
	busy, coordinator time.Duration
	// sqsRequests are the SQS requests as billed (awscall.Counter.Billed);
	// timed sums the timings of the consumer batches and the
	// coordinator's invocation.
	sqsRequests int
	timed       invocations
}

// awsScaleRun runs a tick of n items through the proxy p on endpoints ep,
// with the item partitions of shardsPerPart (0: the default); of a
// run-time list with runTime; with bulk the job is a bulk job
// (baton.Job.Bulk: its shard messages run in place).
func (r *Runner) awsScaleRun(ctx context.Context, p *ddbthrottle.Proxy, ep awsEndpoints, n, shardsPerPart int, runTime, bulk bool) (awsRun, error) {
	o := ep.o
	o.ShardsPerPartition = shardsPerPart
	o.ReceiveWait = r.Config.ScaleLongPoll
	r.seq++
	env, err := openAWS(ctx, fmt.Sprintf("%sscale-%d", r.Prefix, r.seq), ep.ddb, ep.sqs, o)
	if err != nil {
		return awsRun{}, err
	}
	defer env.Close()
	run := awsRun{n: n}
	if run.raw, err = rawWriteRate(ctx, env, r.Config.Window); err != nil {
		return run, err
	}
	j := scaleJob(n, queue.MaxBatch, runTime)
	j.Bulk = bulk
	e, err := exec.New(env.Backend, exec.Options{Catalog: baton.MustCatalog(j), Consumers: r.Config.ScaleAWSConsumers,
		BatchSize: queue.MaxBatch, BatchTimeout: time.Minute, Owner: "scale"})
	if err != nil {
		return run, err
	}
	e.Coordinator.ExpandFrom, e.Coordinator.ExpandItems = r.Config.ExpandFrom, r.Config.ExpandItems
	pollers := consume(ctx, e, r.Config.ScaleAWSConsumers, queue.MaxBatch, n)
	defer pollers.Stop()
	p.Reset()
	env.Calls.Reset()
	start := time.Now()
	coordinatorCalls := &callTimes{}
	sum, invocations, err := fanOutWhole(withCallTimes(ctx, coordinatorCalls), e, j.Name, start, r.logf)
	if err != nil {
		return run, fmt.Errorf("coordinator: %w", err)
	}
	run.coordinator, run.shardMessages, run.invocations = time.Since(start), sum.ShardMessages, invocations
	run.timed.add(timing(start, time.Now(), coordinatorCalls))
	watch, stopWatch := context.WithCancel(ctx)
	go func() { // the run's finish ends the wait too (consumers.ended)
		for watch.Err() == nil {
			if got, err := env.Plain.Ledger.GetRun(watch, j.Name, sum.Run.Nominal); err == nil && got.State.Finished() {
				pollers.ended(got.FinishedAt)
				return
			}
			select {
			case <-watch.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	last, werr := pollers.Wait(ctx)
	if werr == nil {
		// Every item has succeeded: the batch that ended the last ones
		// may still be settling the run. Stopping the consumers now would
		// cut that short, and the run would be reported unsettled.
		settleBy := time.Now().Add(30 * time.Second)
		for time.Now().Before(settleBy) && ctx.Err() == nil {
			if got, err := env.Plain.Ledger.GetRun(ctx, j.Name, sum.Run.Nominal); err == nil && got.State.Finished() {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	stopWatch()
	pollers.Stop()
	run.stats, run.calls = p.Stats(), env.Calls.Snapshot()
	if billed, ok := env.Calls.(interface{ Billed(string) int }); ok {
		run.sqsRequests = billed.Billed("SQS")
	}
	for _, ps := range run.stats.Partitions { // hottest first
		if itemPartitionKey.MatchString(ps.Key) {
			if run.itemKeys == 0 {
				run.hottestItem = ps
			}
			run.itemKeys++
		}
	}
	pollers.mu.Lock()
	run.done, run.batches, run.busy = pollers.succeeded, pollers.batches, pollers.busy
	run.timed.merge(pollers.timed)
	expanded := pollers.lastExpanded
	pollers.mu.Unlock()
	if werr != nil {
		// Not finished: what was measured stands, and the log says which
		// items had not succeeded and how the run stood.
		r.logf("    the run did not finish: %v", werr)
		if items, err := checkSucceeded(context.WithoutCancel(ctx), env.Plain.Ledger, sum.Run, n); err != nil {
			r.logf("    %v", err)
			shown := 0
			for _, it := range items {
				if it.State != ledger.ItemSucceeded && shown < 20 {
					r.logf("    %s: %s, attempt %d, lease until %s, error %q", it.Key.Asset, it.State, it.Attempt, it.LeaseUntil.Format(time.RFC3339Nano), it.Error)
					shown++
				}
			}
		}
		if got, err := env.Plain.Ledger.GetRun(context.WithoutCancel(ctx), j.Name, sum.Run.Nominal); err == nil {
			r.logf("    run %s: %s, total %d, succeeded %d", got.ID, got.State, got.Total, got.Succeeded)
		}
		return run, nil
	}
	run.toDone = last.Sub(start)
	run.toEnqueued = run.coordinator
	if !sum.FannedOutAt.IsZero() {
		run.toEnqueued = sum.FannedOutAt.Sub(start) // before the settling pass that follows
	}
	if sum.ShardMessages > 0 {
		run.toEnqueued = expanded.Sub(start)
	}
	if _, err := checkSucceeded(context.WithoutCancel(ctx), env.Plain.Ledger, sum.Run, n); err != nil {
		return run, err
	}
	got, err := env.Plain.Ledger.GetRun(context.WithoutCancel(ctx), j.Name, sum.Run.Nominal)
	if err != nil {
		return run, err
	}
	run.finished = got.State == ledger.RunComplete
	return run, nil
}

// itemPartitionKey matches the partition key of an item partition of a
// run spread over several (see package awsdynamodb).
var itemPartitionKey = regexp.MustCompile(`^ITEMS#[^#]+#[0-9]+#P[0-9]+$`)

// awsScale runs the emulator sizes behind the proxy, then the contrast
// run with every item in one partition key.
func (r *Runner) awsScale(ctx context.Context, t Target) error {
	const scenario = "8 scale"
	p, ep, stop, err := throttled(t)
	if err != nil {
		return err
	}
	defer stop()
	backend := t.Name + ", behind the throttling proxy"
	type size struct {
		n       int
		runTime bool
	}
	var sizes []size
	for _, n := range r.Config.ScaleAWS {
		sizes = append(sizes, size{n, false})
	}
	for _, n := range r.Config.ScaleAWSRunTime {
		sizes = append(sizes, size{n, true})
	}
	for _, sz := range sizes {
		n := sz.n
		perPart := 0
		if sz.runTime {
			perPart = r.Config.ScaleAWSRunTimeShardsPerPartition
		}
		run, err := r.awsScaleRun(ctx, p, ep, n, perPart, sz.runTime, false)
		if err != nil {
			return fmt.Errorf("%s: %w", scaleSize(n, sz.runTime), err)
		}
		hot := run.stats.Hottest()
		r.logf("  %s: done %d, all enqueued %s, all done %s; hottest partition %s peak %.0f WU/s, %d throttles; %d shard messages, %d batches",
			scaleSize(n, sz.runTime), run.done, run.toEnqueued.Round(time.Millisecond), run.toDone.Round(time.Millisecond), hot.Key, hot.PeakWriteUnits,
			run.stats.Throttles, run.shardMessages, run.batches)
		if !run.finished {
			return fmt.Errorf("%s: %d succeeded, the run did not settle", scaleSize(n, sz.runTime), run.done)
		}
		name := scaleSize(n, sz.runTime)
		enqNote := fmt.Sprintf("%d shard messages from the coordinator (%s of fan-out)", run.shardMessages, run.coordinator.Round(time.Millisecond))
		if sz.runTime {
			sent := "a message per item"
			if run.shardMessages > 0 {
				sent = fmt.Sprintf("%d page shard messages, which the consumers expanded", run.shardMessages)
			}
			enqNote = fmt.Sprintf("the coordinator stored %d pages and sent %s (%s of fan-out, %d invocations of at most a minute); %d item partition keys",
				(n+ledger.PageItems-1)/ledger.PageItems, sent, run.coordinator.Round(time.Millisecond), run.invocations, run.itemKeys)
		}
		perRaw := float64(n) / (run.raw / writesPerItem)
		rate := float64(n) / run.toDone.Seconds()
		r.add(
			Row{Scenario: scenario, Backend: backend, Figure: name + ": tick → all enqueued", Value: run.toEnqueued.Seconds(), Unit: Duration,
				Reference: perRaw, RefText: "items ÷ (raw conditional writes/s ÷ 2), raw writes through the proxy",
				Note: enqNote},
			Row{Scenario: scenario, Backend: backend, Figure: name + ": tick → all done", Value: run.toDone.Seconds(), Unit: Duration,
				Reference: perRaw, RefText: "as above"},
			Row{Scenario: scenario, Backend: backend, Figure: fmt.Sprintf("%s, %d consumers × %d: items/s", name, r.Config.ScaleAWSConsumers, queue.MaxBatch),
				Value: rate, Reference: run.raw / writesPerItem, Unit: Rate, RefText: "raw conditional writes/s ÷ 2 writes per item (8 writers, just before)"},
			Row{Scenario: scenario, Backend: backend, Figure: name + ": hottest partition key, peak write units in one second", Value: hot.PeakWriteUnits,
				Reference: ddbthrottle.DefaultWriteUnits, Unit: Count, RefText: "DynamoDB's limit per partition key value", Goal: RatioAtMost(1),
				Note: fmt.Sprintf("%s; %d partition keys written", hot.Key, len(run.stats.Partitions))},
			Row{Scenario: scenario, Backend: backend, Figure: name + ": hottest partition key, peak read units in one second", Value: run.stats.HottestRead().PeakReadUnits,
				Reference: ddbthrottle.DefaultReadUnits, Unit: Count, RefText: "DynamoDB's limit per partition key value", Goal: RatioAtMost(1),
				Note: run.stats.HottestRead().Key},
			Row{Scenario: scenario, Backend: backend, Figure: name + ": requests throttled", Value: float64(run.stats.Throttles), Unit: Count,
				Reference: 0, RefText: "none", Goal: AtMost(0, Count)},
			Row{Scenario: scenario, Backend: backend, Figure: name + ": write units per item", Value: run.stats.WriteUnits / float64(n), Unit: Count,
				Reference: writesPerItem, RefText: "a claim and a completion of under 1 KB"},
			Row{Scenario: scenario, Backend: backend, Figure: name + ": read units per item", Value: run.stats.ReadUnits / float64(n), Unit: Count,
				Reference: 0, RefText: "—", Note: "the settling reads (strongly consistent: a probe of 8 of its shard's names per batch and shard, the shard once they have ended) dominate"},
			Row{Scenario: scenario, Backend: backend, Figure: name + ": calls per item", Value: float64(Total(run.calls)) / float64(n), Unit: Count,
				Reference: 0, RefText: "—", Note: perItem(run.calls, n)},
		)
		if sz.runTime {
			r.add(Row{Scenario: scenario, Backend: backend, Figure: name + ": hottest item partition key, peak write units in one second", Value: run.hottestItem.PeakWriteUnits,
				Reference: ddbthrottle.DefaultWriteUnits, Unit: Count, RefText: "DynamoDB's limit per partition key value", Goal: RatioAtMost(1),
				Note: fmt.Sprintf("%s; %d item partition keys written, a page's items in one", run.hottestItem.Key, run.itemKeys)})
		} else {
			r.addCost(backend, run, perItemMode)
			if err := r.awsScaleBulk(ctx, p, ep, backend, run); err != nil {
				return fmt.Errorf("%d items, bulk: %w", n, err)
			}
		}
	}
	if n := r.Config.ScaleContrast; n > 0 {
		// Every item in one partition key, as before item partitions: a
		// run bounded so that the throttling shows without waiting it out.
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		run, err := r.awsScaleRun(cctx, p, ep, n, 1<<30, false, false)
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("contrast, %d items: %w", n, err)
		}
		hot := run.stats.Hottest()
		r.logf("  contrast, %d items in one partition key: %d done, hottest %s peak %.0f WU/s, %d throttles", n, run.done, hot.Key, hot.PeakWriteUnits, run.stats.Throttles)
		sz := number(float64(n))
		note := fmt.Sprintf("%s; %d of %d items done", hot.Key, run.done, n)
		if run.finished {
			note += fmt.Sprintf(" in %s", run.toDone.Round(time.Millisecond))
		} else {
			note += " when stopped"
		}
		r.add(
			Row{Scenario: scenario, Backend: backend, Figure: sz + " items all in one partition key (the layout before): peak write units in one second", Value: hot.PeakWriteUnits,
				Reference: ddbthrottle.DefaultWriteUnits, Unit: Count, RefText: "DynamoDB's limit per partition key value", Note: note},
			Row{Scenario: scenario, Backend: backend, Figure: sz + " items all in one partition key (the layout before): requests throttled", Value: float64(run.stats.Throttles),
				Reference: 0, Unit: Count, RefText: "none"},
		)
	}
	return nil
}

// awsScaleBulk runs the tick of items' size (the per-item mode run) again
// as a bulk job (baton.Job.Bulk), and adds its latency beside per-item mode's and its
// cost rows (the goal line judges them).
func (r *Runner) awsScaleBulk(ctx context.Context, p *ddbthrottle.Proxy, ep awsEndpoints, backend string, items awsRun) error {
	const scenario = "8 scale"
	n := items.n
	// Bounded: a bulk run that does not settle is reported, not waited for.
	bctx, cancel := context.WithTimeout(ctx, 3*items.toDone+2*time.Minute)
	defer cancel()
	run, err := r.awsScaleRun(bctx, p, ep, n, 0, false, true)
	if err != nil {
		return err
	}
	r.logf("  %d items, bulk: done %d, all done %s (per-item mode %s); %d shard messages, %d batches, %.3f SQS requests and %.3f write units per item",
		n, run.done, run.toDone.Round(time.Millisecond), items.toDone.Round(time.Millisecond), run.shardMessages, run.batches,
		float64(run.sqsRequests)/float64(n), run.stats.WriteUnits/float64(n))
	if !run.finished {
		return fmt.Errorf("%d succeeded, the run did not settle", run.done)
	}
	sz := number(float64(n))
	r.add(
		Row{Scenario: scenario, Backend: backend, Figure: sz + " items, bulk mode (Job.Bulk: shards run in place): tick → all done", Value: run.toDone.Seconds(), Unit: Duration,
			Reference: items.toDone.Seconds(), RefText: "per-item mode, the run just before",
			Note: fmt.Sprintf("%d shard messages, %d consumer batches; calls per item: %s", run.shardMessages, run.batches, perItem(run.calls, n))},
		Row{Scenario: scenario, Backend: backend, Figure: fmt.Sprintf("%s items, bulk mode, %d consumers × %d: items/s", sz, r.Config.ScaleAWSConsumers, queue.MaxBatch),
			Value: float64(n) / run.toDone.Seconds(), Reference: float64(n) / items.toDone.Seconds(), Unit: Rate, RefText: "per-item mode"},
	)
	r.addCost(backend, run, bulkMode)
	return nil
}

// contended measures refused lease acquisitions on the emulators behind
// the throttling proxy: one lease held, Contended contenders asking for
// it, against raw conditional writes of as many writers.
func (r *Runner) contended(ctx context.Context, t Target) error {
	const scenario = "10 contended"
	p, ep, stop, err := throttled(t)
	if err != nil {
		return err
	}
	defer stop()
	backend := t.Name + ", behind the throttling proxy"
	r.seq++
	env, err := openAWS(ctx, fmt.Sprintf("%scontended-%d", r.Prefix, r.seq), ep.ddb, ep.sqs, ep.o)
	if err != nil {
		return err
	}
	defer env.Close()
	counted := lease.Counting(env.Backend.Leases, nil) // as shipped: + the contention record
	for _, n := range r.Config.Contended {
		job := fmt.Sprintf("held-%d", n)
		if _, err := env.Plain.Leases.Acquire(ctx, lease.AcquireParams{Job: job, Owner: "holder", TTL: time.Hour, Now: time.Now()}); err != nil {
			return err
		}
		var raw, refused Samples
		seq := 0
		next := make(chan int, 1)
		next <- 0
		rawLoad, err := RunWorkers(ctx, n, r.Config.Window, func(ctx context.Context, _ int) (int, error) {
			seq = <-next + 1
			k := fmt.Sprintf("contended-raw-%d-%d", n, seq)
			next <- seq
			start := time.Now()
			err := env.RawWriteFunc(ctx, k)
			raw.Add(time.Since(start))
			return 1, err
		})
		if err != nil {
			return fmt.Errorf("raw writes: %w", err)
		}
		p.Reset()
		env.Calls.Reset()
		load, err := RunWorkers(ctx, n, r.Config.Window, func(ctx context.Context, w int) (int, error) {
			start := time.Now()
			_, err := counted.Acquire(ctx, lease.AcquireParams{Job: job, Owner: fmt.Sprintf("c%d", w), TTL: time.Minute, Now: start, Skew: time.Second})
			if !errors.Is(err, lease.ErrHeld) {
				if err == nil {
					err = errors.New("acquired a held lease")
				}
				return 0, err
			}
			refused.Add(time.Since(start))
			return 1, nil
		})
		if err != nil {
			return fmt.Errorf("%d contenders: %w", n, err)
		}
		st, calls := p.Stats(), env.Calls.Snapshot()
		k := float64(load.Ops)
		ref := fmt.Sprintf("raw conditional writes, %d writers", n)
		r.logf("  %d contenders: %d refused (%.0f/s), %.2f calls and %.2f write units each, p50 %.2f ms; %d throttles",
			n, load.Ops, load.PerSecond(), float64(Total(calls))/k, st.WriteUnits/k, refused.Percentile(50)*1e3, st.Throttles)
		r.add(
			Row{Scenario: scenario, Backend: backend, Figure: fmt.Sprintf("refused acquisition p50, %d contenders on one held lease", n), Value: refused.Percentile(50),
				Reference: raw.Percentile(50), Unit: Duration, RefText: ref + " p50"},
			Row{Scenario: scenario, Backend: backend, Figure: fmt.Sprintf("refused acquisition p99, %d contenders", n), Value: refused.Percentile(99),
				Reference: raw.Percentile(99), Unit: Duration, RefText: ref + " p99"},
			Row{Scenario: scenario, Backend: backend, Figure: fmt.Sprintf("refused acquisitions/s, %d contenders", n), Value: load.PerSecond(),
				Reference: rawLoad.PerSecond(), Unit: Rate, RefText: ref + ", writes/s"},
			Row{Scenario: scenario, Backend: backend, Figure: fmt.Sprintf("calls per refused acquisition (lease + contention record), %d contenders", n), Value: float64(Total(calls)) / k,
				Reference: 2, Unit: Count, RefText: "1 refused conditional write + 1 write of the contention record", Note: perItem(calls, int(k))},
			Row{Scenario: scenario, Backend: backend, Figure: fmt.Sprintf("write units per refused acquisition, %d contenders", n), Value: st.WriteUnits / k,
				Reference: 2, Unit: Count, RefText: "as above: DynamoDB charges a refused conditional write"},
			Row{Scenario: scenario, Backend: backend, Figure: fmt.Sprintf("hottest partition key, peak write units in one second, %d contenders", n), Value: st.Hottest().PeakWriteUnits,
				Reference: ddbthrottle.DefaultWriteUnits, Unit: Count, RefText: "DynamoDB's limit per partition key value",
				Note: fmt.Sprintf("%s; %d requests throttled", st.Hottest().Key, st.Throttles)},
		)
	}
	return nil
}
