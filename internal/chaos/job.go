package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// WideAssets is how many assets the chaos job has beside fx's: enough
// that its runs have more items than a shard (fanin.ShardItems), so that
// they settle shard by shard, by the consumers that end their last items
// (the old limit of a run a consumer settled itself was 64 items).
const WideAssets = 60

// Job is the chaos job: the reference job fx (seven assets and DXY derived
// from six of them, every bar written through the task's fenced effects)
// and WideAssets more assets (W00, W01, …, each writing one fenced effect
// without latency), with Limits, the given simulated provider latency, and
// its processor wrapped to journal every application in j. With bulk its
// runs are processed shard by shard in place (baton.Job.Bulk): the
// coordinator sends one shard message of every asset, which a consumer
// runs, handing over what does not end there.
func Job(latency time.Duration, j *Journal, bulk bool) baton.Job {
	job := fx.Job(&fx.Options{Latency: latency})
	job.Bulk = bulk
	for i := range WideAssets {
		job.Assets = append(job.Assets, fmt.Sprintf("W%02d", i))
	}
	job.Limits = Limits
	job.Processor = recorder{inner: job.Processor, journal: j}
	return job
}

// wide is the processor of the assets beside fx's: one fenced effect at
// the key fx would use, holding the item key.
func wide(ctx context.Context, t baton.Task) ([]byte, error) {
	out := []byte(t.Key.String())
	if err := t.Effects.Put(ctx, effectKey(t.Asset, t.Nominal), out); err != nil {
		if errors.Is(err, baton.ErrStale) {
			return nil, baton.Permanent(err)
		}
		return nil, err
	}
	return out, nil
}

// recorder journals each application of the processor: a call that wrote
// its effect and returned its result.
type recorder struct {
	inner   baton.Processor
	journal *Journal
}

func (r recorder) Process(ctx context.Context, t baton.Task) ([]byte, error) {
	process := r.inner.Process
	if strings.HasPrefix(t.Asset, "W") {
		process = wide
	}
	out, err := process(ctx, t)
	if err == nil {
		r.journal.Add(Record{Kind: KindApply, Key: t.Key.String(), Attempt: t.Attempt})
	}
	return out, err
}

// effectKey is the effect key fx writes for an item of the tick.
func effectKey(asset string, nominal time.Time) string {
	return fx.BarKey(asset, fx.BarMinute(nominal))
}
