package chaos

import (
	"context"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
)

// Limits are the chaos job's: fx's, scaled down so that leases, claims,
// retries and visibility timeouts play out in seconds. Their ratios are
// the ones that matter: a claim (ItemLease, cut to the batch deadline
// minus DeadlineMargin) ends before a killed batch's messages come back
// (visibility), and a coordinator's lease (LeaseTTL, cut to its deadline)
// ends well before the tick's triggers stop being retried.
var Limits = baton.Limits{
	LeaseTTL:       time.Second,
	ClockSkew:      250 * time.Millisecond,
	ItemLease:      time.Second,
	MaxAttempts:    5,
	Concurrency:    4,
	DeadlineMargin: 200 * time.Millisecond,
}

// The consumers' timing, scaled as Limits are.
const (
	batchTimeout = 2 * time.Second        // each batch's deadline (Lambda's timeout)
	visibility   = 3 * time.Second        // a received message stays hidden this long
	retryDelay   = 250 * time.Millisecond // a failed message is visible again after this
	batchSize    = 4                      // messages per batch
	pollers      = 2                      // batches in flight per consumer
)

// Job is the chaos job: the reference job fx (seven assets and DXY derived
// from six of them, every bar written through the task's fenced effects)
// with Limits, the given simulated provider latency, and its processor
// wrapped to journal every application in j.
func Job(latency time.Duration, j *Journal) baton.Job {
	job := fx.Job(&fx.Options{Latency: latency})
	job.Limits = Limits
	job.Processor = recorder{inner: job.Processor, journal: j}
	return job
}

// recorder journals each application of the processor: a call that wrote
// its effect and returned its result.
type recorder struct {
	inner   baton.Processor
	journal *Journal
}

func (r recorder) Process(ctx context.Context, t baton.Task) ([]byte, error) {
	out, err := r.inner.Process(ctx, t)
	if err == nil {
		r.journal.Add(Record{Kind: KindApply, Key: t.Key.String(), Attempt: t.Attempt})
	}
	return out, err
}

// effectKey is the effect key fx writes for an item of the tick.
func effectKey(asset string, nominal time.Time) string {
	return fx.BarKey(asset, fx.BarMinute(nominal))
}
