package tickfactory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/bars"
)

// Options tune the processor. The zero value (or nil) is usable.
type Options struct {
	// Latency is the simulated provider latency per catalog asset; the
	// wait honours the task's context. 0: none.
	Latency time.Duration
	// Sleep waits d or until ctx is done, returning ctx's error then.
	// nil: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// NowFunc stamps WrittenAt on bars. nil: time.Now.
	NowFunc func() time.Time
}

// Result is the processor's result for an item: the bar it wrote, as JSON.
// It is what the derived item receives in Task.Inputs.
type Result struct {
	Asset  string    `json:"asset"`
	Minute time.Time `json:"minute"`
	Open   float64   `json:"open"`
	High   float64   `json:"high"`
	Low    float64   `json:"low"`
	Close  float64   `json:"close"`
}

// Processor ingests one asset's bar, or derives the DXY bar.
type Processor struct {
	store   bars.Store
	latency time.Duration
	sleep   func(ctx context.Context, d time.Duration) error
	now     func() time.Time
}

var _ baton.Processor = (*Processor)(nil)

// NewProcessor returns the fx processor writing to store.
func NewProcessor(store bars.Store, o *Options) *Processor {
	p := &Processor{store: store, sleep: sleepCtx, now: time.Now}
	if o != nil {
		p.latency = o.Latency
		if o.Sleep != nil {
			p.sleep = o.Sleep
		}
		if o.NowFunc != nil {
			p.now = o.NowFunc
		}
	}
	return p
}

// Process handles one item. For a catalog asset it "fetches" the bar of
// BarMinute(t.Nominal) (a deterministic synthetic bar, after the simulated
// latency); for DXY it computes the index bar from the inputs' bars (open
// from the opens, close from the closes, high and low the larger and
// smaller of the two). Either way it writes the bar fenced by the item's
// (generation, attempt) and returns it as a JSON Result. A stale write (the
// store holds a newer generation or attempt), an unknown asset and
// implausible input are permanent errors.
//
// Why (generation, attempt) and not the message's fence: that pair strictly
// increases across every claim of the item's bar (each claim is a new
// attempt; a forced replay is a new generation), whereas the fence a
// message carries depends on which coordinator invocation sent that copy —
// after a resumed fan-out, attempt 2 may arrive on a copy with a lower
// fence than attempt 1's, and ordering by fence would reject it.
func (p *Processor) Process(ctx context.Context, t baton.Task) ([]byte, error) {
	var (
		b   bars.Bar
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
	b.Fence, b.Attempt, b.WrittenAt = int64(t.Key.Run.Generation), t.Attempt, p.now().UTC()
	if err := p.store.Put(ctx, b); err != nil {
		err = fmt.Errorf("%s: put bar %s %s (generation %d, attempt %d): %w",
			t.Key, b.Asset, b.Minute.Format(time.RFC3339), b.Fence, b.Attempt, err)
		if errors.Is(err, bars.ErrStale) {
			return nil, baton.Permanent(err)
		}
		return nil, err
	}
	return json.Marshal(Result{Asset: b.Asset, Minute: b.Minute, Open: b.Open, High: b.High, Low: b.Low, Close: b.Close})
}

func dollarIndexBar(t baton.Task) (bars.Bar, error) {
	in, err := inputBars(t.Inputs)
	if err != nil {
		return bars.Bar{}, err
	}
	opens := make(map[string]float64, len(in))
	closes := make(map[string]float64, len(in))
	for pair, r := range in {
		opens[pair], closes[pair] = r.Open, r.Close
	}
	open, err := DollarIndex(opens)
	if err != nil {
		return bars.Bar{}, fmt.Errorf("opens: %w", err)
	}
	cls, err := DollarIndex(closes)
	if err != nil {
		return bars.Bar{}, fmt.Errorf("closes: %w", err)
	}
	open, cls = round(open, 3), round(cls, 3)
	return bars.Bar{
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
