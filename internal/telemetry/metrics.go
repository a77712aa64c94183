package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/batonhq/baton/internal/queue"
)

// Metric attributes are bounded: the job, the outcome and the engine
// (and a queue's name, for queue depth), never a run id or an item key.

// setKey names one attribute set.
type setKey struct{ job, outcome string }

// options are one attribute set as the instruments' options, built once.
type options struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

// opts returns the options of (job, outcome), building them the first
// time: a measurement then allocates nothing of its own.
func (t *Telemetry) opts(job, outcome string) options {
	k := setKey{job, outcome}
	t.mu.RLock()
	o, ok := t.sets[k]
	t.mu.RUnlock()
	if ok {
		return o
	}
	kv := make([]attribute.KeyValue, 0, 3)
	if job != "" { // "": a malformed message's, whose job is not the catalog's
		kv = append(kv, KeyJob.String(job))
	}
	if outcome != "" {
		kv = append(kv, KeyOutcome.String(outcome))
	}
	if t.engine != "" {
		kv = append(kv, KeyEngine.String(t.engine))
	}
	set := metric.WithAttributeSet(attribute.NewSet(kv...))
	o = options{add: []metric.AddOption{set}, record: []metric.RecordOption{set}}
	t.mu.Lock()
	if t.sets == nil {
		t.sets = map[setKey]options{}
	}
	t.sets[k] = o
	t.mu.Unlock()
	return o
}

// Item counts one item message of job handled with outcome (a consumer
// status: succeeded, duplicate, failed…).
func (t *Telemetry) Item(ctx context.Context, job, outcome string) {
	t = t.Or()
	if !t.items.Enabled(ctx) {
		return
	}
	t.items.Add(ctx, 1, t.opts(job, outcome).add...)
}

// TickToDone records an item's staleness at completion: from its tick's
// nominal time to its completion.
func (t *Telemetry) TickToDone(ctx context.Context, job string, d time.Duration) {
	t = t.Or()
	if !t.tickToDone.Enabled(ctx) {
		return
	}
	t.tickToDone.Record(ctx, d.Seconds(), t.opts(job, "").record...)
}

// ClaimLatency records how long an item's claim took.
func (t *Telemetry) ClaimLatency(ctx context.Context, job string, d time.Duration) {
	t = t.Or()
	if !t.claimLat.Enabled(ctx) {
		return
	}
	t.claimLat.Record(ctx, d.Seconds(), t.opts(job, "").record...)
}

// Invocation counts one coordinator invocation for job with outcome (a
// coordinator.RunOutcome, or "error"); a skipped one (the lease held by
// another owner) counts as lease contention too.
func (t *Telemetry) Invocation(ctx context.Context, job, outcome string, contended bool) {
	t = t.Or()
	if !t.ticks.Enabled(ctx) {
		return
	}
	t.ticks.Add(ctx, 1, t.opts(job, outcome).add...)
	if contended {
		t.contention.Add(ctx, 1, t.opts(job, "").add...)
	}
}

// CountedQueue is a queue whose depth the runtime reports.
type CountedQueue struct {
	// Name is the queue's baton.queue attribute: "work", "work-dlq", or
	// "job-" and a job queue's name.
	Name    string
	Counter queue.Counter
}

// ObserveQueueDepths reports the depth of each of queues as the gauge
// baton.queue.depth (attributes baton.queue and baton.engine), counted
// (Counter.Depth) each time the meter provider collects: every message
// the queue holds, visible, in flight or delayed. A queue whose count
// fails is left out of that collection. It returns the function that
// stops the reports; with a no-op provider nothing is ever counted.
func (t *Telemetry) ObserveQueueDepths(queues []CountedQueue) (stop func()) {
	t = t.Or()
	if len(queues) == 0 {
		return func() {}
	}
	sets := make([]metric.ObserveOption, len(queues))
	for i, q := range queues {
		kv := []attribute.KeyValue{KeyQueue.String(q.Name)}
		if t.engine != "" {
			kv = append(kv, KeyEngine.String(t.engine))
		}
		sets[i] = metric.WithAttributeSet(attribute.NewSet(kv...))
	}
	reg, err := t.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		for i, q := range queues {
			d, err := q.Counter.Depth(ctx)
			if err != nil {
				continue // this collection goes without it; telemetry never fails a run
			}
			o.ObserveInt64(t.depth, int64(d.Total()), sets[i])
		}
		return nil
	}, t.depth)
	if err != nil {
		return func() {}
	}
	return func() { _ = reg.Unregister() }
}
