// Package fx is baton's reference job, written as any user's job is: with
// the public API alone. Once a minute it ingests a 1-minute OHLC bar for
// six FX pairs and gold, then derives the US dollar index (DXY) from the
// six pairs once they have all succeeded.
//
// The bars are synthetic and deterministic (seeded from asset and minute)
// so that runs, retries and replays can be compared bit for bit; a
// configurable latency stands in for the market-data provider. Every bar
// is written through the task's fenced effect store (baton.Task.Effects),
// so a stale worker cannot overwrite a newer one's bar.
//
// Job is the one source of truth for the job: baton's own Lambda
// functions, CLI and template checks all read it.
package fx

import (
	"time"

	"github.com/batonhq/baton"
)

// Name is the job's name.
const Name = "fx"

// DXY is the name of the derived item.
const DXY = "DXY"

// Assets are the job's assets, in fan-out order.
var Assets = []string{"EURUSD", "GBPUSD", "USDJPY", "USDCAD", "USDSEK", "USDCHF", "XAUUSD"}

// DXYInputs are the six currency pairs the dollar index is computed from.
var DXYInputs = []string{"EURUSD", "USDJPY", "GBPUSD", "USDCAD", "USDSEK", "USDCHF"}

// Job returns the fx job with its processor (nil options: no simulated
// latency): every minute, the seven assets, DXY derived from the six FX
// pairs.
func Job(o *Options) baton.Job {
	return baton.Job{
		Name:     Name,
		Schedule: "rate(1 minute)",
		Assets:   append([]string(nil), Assets...),
		Derived:  []baton.Derived{{Name: DXY, Inputs: append([]string(nil), DXYInputs...)}},
		Limits: baton.Limits{
			LeaseTTL:       2 * time.Minute,
			ClockSkew:      2 * time.Second,
			ItemLease:      30 * time.Second,
			MaxAttempts:    5,
			Concurrency:    16,
			DeadlineMargin: 2 * time.Second,
		},
		// A minute's bar is stale once the next minute's is due.
		StalenessBudget: time.Minute,
		Processor:       NewProcessor(o),
	}
}

// Catalog returns a catalog holding the fx job.
func Catalog(o *Options) *baton.Catalog {
	return baton.MustCatalog(Job(o))
}
