// Package tickfactory is baton's reference job: once a minute it ingests a
// 1-minute OHLC bar for six FX pairs and gold, then derives the US dollar
// index (DXY) from the six pairs once they have all succeeded.
//
// The bars are synthetic and deterministic (seeded from asset and minute)
// so that runs, retries and replays can be compared bit for bit; a
// configurable latency stands in for the market-data provider. Every write
// to the bars store is fenced by the item's (generation, attempt), so a
// stale worker cannot overwrite a newer one's bar (invariant 9).
//
// Definition is the one source of truth for the job: the local runtime, the
// Lambda functions and the template checks all read it.
package tickfactory

import (
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/bars"
)

// Name is the job's name.
const Name = "fx"

// DXY is the name of the derived item.
const DXY = "DXY"

// Assets are the catalog, in fan-out order.
var Assets = []string{"EURUSD", "GBPUSD", "USDJPY", "USDCAD", "USDSEK", "USDCHF", "XAUUSD"}

// DXYInputs are the six currency pairs the dollar index is computed from.
var DXYInputs = []string{"EURUSD", "USDJPY", "GBPUSD", "USDCAD", "USDSEK", "USDCHF"}

// Definition returns the fx job: every minute, the seven assets, DXY
// derived from the six FX pairs.
func Definition() baton.Job {
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
	}
}

// Catalog returns a catalog holding the fx job with its processor.
func Catalog(store bars.Store, o *Options) *baton.Catalog {
	j := Definition()
	j.Processor = NewProcessor(store, o)
	return baton.MustCatalog(j)
}
