package fx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/batonhq/baton"
)

// Options tune the processor. The zero value (or nil) is usable.
type Options struct {
	// Latency is the simulated provider latency per asset; the wait
	// honours the task's context. 0: none.
	Latency time.Duration
	// SleepFunc waits d or until ctx is done, returning ctx's error then.
	// nil: a timer.
	SleepFunc func(ctx context.Context, d time.Duration) error
}

// Bar is one asset's OHLC for one minute: what the processor stores (as
// JSON, under BarKey) and returns as the item's result, which the derived
// item receives in Task.Inputs.
//
// Close comes first after the asset, so that a truncated result (the
// item table of 'baton run') shows it.
type Bar struct {
	Asset  string    `json:"asset"`
	Close  float64   `json:"close"`
	Open   float64   `json:"open"`
	High   float64   `json:"high"`
	Low    float64   `json:"low"`
	Minute time.Time `json:"minute"` // start of the minute, UTC
}

// BarKey is the effect key of asset's bar for minute.
func BarKey(asset string, minute time.Time) string {
	return "bar/" + asset + "/" + minute.UTC().Format(time.RFC3339)
}

// ReadBar reads asset's bar for minute from an effect store.
func ReadBar(ctx context.Context, e baton.Effects, asset string, minute time.Time) (Bar, baton.Effect, error) {
	eff, err := e.Get(ctx, BarKey(asset, minute))
	if err != nil {
		return Bar{}, baton.Effect{}, err
	}
	var b Bar
	if err := json.Unmarshal(eff.Value, &b); err != nil {
		return Bar{}, eff, fmt.Errorf("bar %s: %w", eff.Key, err)
	}
	return b, eff, nil
}

// Processor ingests one asset's bar, or derives the DXY bar.
type Processor struct {
	latency time.Duration
	sleep   func(ctx context.Context, d time.Duration) error
}

var _ baton.Processor = (*Processor)(nil)

// NewProcessor returns the fx processor.
func NewProcessor(o *Options) *Processor {
	p := &Processor{sleep: sleepCtx}
	if o != nil {
		p.latency = o.Latency
		if o.SleepFunc != nil {
			p.sleep = o.SleepFunc
		}
	}
	return p
}

// Process handles one item. For an asset it "fetches" the bar of
// BarMinute(t.Nominal) (a deterministic synthetic bar, after the simulated
// latency); for DXY it computes the index bar from the inputs' bars (open
// from the opens, close from the closes, high and low the larger and
// smaller of the two). Either way it writes the bar through t.Effects,
// which fences the write by the item's (generation, attempt), and returns
// the bar as JSON. A stale write (a later generation or attempt wrote the
// bar), an unknown asset and implausible input are permanent errors.
//
// Why (generation, attempt) and not the message's fence: that pair strictly
// increases across every claim of the item's bar (each claim is a new
// attempt; a forced replay is a new generation), whereas the fence a
// message carries depends on which coordinator invocation sent that copy.
func (p *Processor) Process(ctx context.Context, t baton.Task) ([]byte, error) {
	var (
		b   Bar
		err error
	)
	if t.Asset == DXY {
		b, err = dollarIndexBar(t)
	} else {
		if p.latency > 0 {
			if err := p.sleep(ctx, p.latency); err != nil {
				return nil, fmt.Errorf("fetch %s: %w", t.Asset, err)
			}
		}
		b, err = Synthesize(t.Asset, BarMinute(t.Nominal))
	}
	if err != nil {
		return nil, baton.Permanent(fmt.Errorf("%s: %w", t.Key, err))
	}
	out, err := json.Marshal(b)
	if err != nil {
		return nil, baton.Permanent(fmt.Errorf("%s: encode bar: %w", t.Key, err))
	}
	if t.Effects == nil {
		return nil, baton.Permanent(fmt.Errorf("%s: the task has no effect store", t.Key))
	}
	if err := t.Effects.Put(ctx, BarKey(b.Asset, b.Minute), out); err != nil {
		err = fmt.Errorf("%s: put bar %s %s (generation %d, attempt %d): %w",
			t.Key, b.Asset, b.Minute.Format(time.RFC3339), t.Key.Run.Generation, t.Attempt, err)
		if errors.Is(err, baton.ErrStale) {
			return nil, baton.Permanent(err)
		}
		return nil, err
	}
	return out, nil
}

func dollarIndexBar(t baton.Task) (Bar, error) {
	in, err := inputBars(t.Inputs)
	if err != nil {
		return Bar{}, err
	}
	opens := make(map[string]float64, len(in))
	closes := make(map[string]float64, len(in))
	for pair, r := range in {
		opens[pair], closes[pair] = r.Open, r.Close
	}
	open, err := DollarIndex(opens)
	if err != nil {
		return Bar{}, fmt.Errorf("opens: %w", err)
	}
	cls, err := DollarIndex(closes)
	if err != nil {
		return Bar{}, fmt.Errorf("closes: %w", err)
	}
	open, cls = round(open, 3), round(cls, 3)
	return Bar{
		Asset:  DXY,
		Minute: BarMinute(t.Nominal),
		Open:   open,
		Close:  cls,
		High:   math.Max(open, cls),
		Low:    math.Min(open, cls),
	}, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
