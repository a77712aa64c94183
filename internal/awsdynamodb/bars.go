package awsdynamodb

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/bars"
	"github.com/batonhq/baton/internal/ledger"
)

// Bar record attributes (pk BAR#<asset>, sk <minute>).
const (
	barOpen      = "open"
	barHigh      = "high"
	barLow       = "low"
	barClose     = "close"
	barFence     = "fence"
	barAttempt   = "attempt"
	barWrittenAt = "written_at"
)

// BarsStore is a bars.Store on a DynamoDB table.
type BarsStore struct {
	t table
}

var _ bars.Store = (*BarsStore)(nil)

// NewBarsStore returns a bars store on the table called table, which must
// have the key schema CreateTable makes.
func NewBarsStore(client API, table string, o *Options) *BarsStore {
	return &BarsStore{t: newTable(client, table, o)}
}

// Put implements bars.Store: one PutItem conditioned on the stored
// (fence, attempt) being at most b's.
func (s *BarsStore) Put(ctx context.Context, b bars.Bar) error {
	op := fmt.Sprintf("put bar %s@%s", b.Asset, timeSK(b.Minute))
	if err := ledger.ValidName("asset", b.Asset); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	rec := record{
		barFence:     num(b.Fence),
		barAttempt:   num(int64(b.Attempt)),
		barWrittenAt: nanos(b.WrittenAt),
	}
	for name, f := range map[string]float64{barOpen: b.Open, barHigh: b.High, barLow: b.Low, barClose: b.Close} {
		v, err := float(f)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", op, name, err)
		}
		rec[name] = v
	}
	cond := "attribute_not_exists(#pk) OR #fence < :fence OR (#fence = :fence AND #attempt <= :attempt)"
	values := record{":fence": num(b.Fence), ":attempt": num(int64(b.Attempt))}
	k := barKey(b.Asset, b.Minute)
	for range raceRetries {
		w, err := s.t.put(ctx, op, k, rec, cond, values)
		if err != nil {
			return err
		}
		if w.applied {
			return nil
		}
		if w.rec != nil {
			stored, err := decodeBar(b.Asset, w.rec)
			if err != nil {
				return fmt.Errorf("%s: %w", op, err)
			}
			return fmt.Errorf("%s: stored bar has fence %d attempt %d, above %d/%d: %w",
				op, stored.Fence, stored.Attempt, b.Fence, b.Attempt, bars.ErrStale)
		}
		// Gone since the failed condition: retry.
	}
	return fmt.Errorf("%s: the bar record kept changing under the write; try again", op)
}

// Get implements bars.Store with one consistent GetItem.
func (s *BarsStore) Get(ctx context.Context, asset string, minute time.Time) (bars.Bar, error) {
	op := fmt.Sprintf("get bar %s@%s", asset, timeSK(minute))
	if err := ledger.ValidName("asset", asset); err != nil {
		return bars.Bar{}, fmt.Errorf("%s: %w", op, err)
	}
	rec, err := s.t.get(ctx, op, barKey(asset, minute))
	if err != nil {
		return bars.Bar{}, err
	}
	if rec == nil {
		return bars.Bar{}, fmt.Errorf("%s: %w", op, bars.ErrNotFound)
	}
	b, err := decodeBar(asset, rec)
	if err != nil {
		return bars.Bar{}, fmt.Errorf("%s: %w", op, err)
	}
	return b, nil
}

// decodeBar reads a bar record of asset; the minute comes from its key.
func decodeBar(asset string, rec record) (bars.Bar, error) {
	k, err := keyOf(rec)
	if err != nil {
		return bars.Bar{}, fmt.Errorf("decode bar record: %w", err)
	}
	minute, err := parseTimeSK(k.sk)
	if err != nil {
		return bars.Bar{}, fmt.Errorf("decode bar record: %w", err)
	}
	d := decoder{rec: rec}
	b := bars.Bar{
		Asset:     asset,
		Minute:    minute,
		Open:      d.float(barOpen),
		High:      d.float(barHigh),
		Low:       d.float(barLow),
		Close:     d.float(barClose),
		Fence:     d.int64(barFence),
		Attempt:   d.int(barAttempt),
		WrittenAt: d.time(barWrittenAt),
	}
	if d.err != nil {
		return bars.Bar{}, fmt.Errorf("decode bar record %s: %w", k, d.err)
	}
	return b, nil
}
