package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/ratelimit"
)

// RateTake is the outcome of an engine's take of a rate limit's unit: the
// window's count after the take, or, when the window was full (Full), the
// count that refused it.
type RateTake struct {
	Count int
	Full  bool
}

// RateLimitDB is what RateLimitStore needs of an engine: its statements
// on the counters and slots, run as the engine runs them, errors
// translated.
type RateLimitDB interface {
	// TakeUnit adds one to the count of p's window and shard, created
	// with p.Expires, unless it reached p.Max; when the window's first
	// unit is taken it removes the name's windows before the previous
	// one. A refused take reads the count.
	TakeUnit(ctx context.Context, p ratelimit.TakeParams) (RateTake, error)
	// HoldSlot gives the slot to p.Holder until p.Until when it is free,
	// run out at p.Now or the holder's; applied reports that it did.
	HoldSlot(ctx context.Context, p ratelimit.SlotParams) (applied bool, err error)
	// FreeSlot frees the slot when p.Holder holds it; applied reports
	// that it did (or, after an unknown outcome, may have).
	FreeSlot(ctx context.Context, p ratelimit.SlotParams) (applied bool, err error)
	// DeleteRunOut removes the counters that expired before expired and
	// the slots whose until is before idle (Nanos both), and returns how
	// many records it removed.
	DeleteRunOut(ctx context.Context, expired, idle int64) (int, error)
	// ReadUsage runs the usage query of p at UsageAt(p) and calls row
	// with each row's scan, in the order of the names. For a limit with
	// slots (p.Limit.InFlight > 0) a row is a held slot: name, slot,
	// holder, until; for a rate limit it is a name's count in the window:
	// name, the sum of its shards' counts, '', 0. p.Keyed reads every
	// key's records ("<name>#<key>"), else the name's.
	ReadUsage(ctx context.Context, p ratelimit.ListParams, row func(ScanFunc) error) error
}

// RateLimitStore is ratelimit.Store, with the abilities ratelimit.Pruner
// and ratelimit.Lister, over an engine's RateLimitDB.
type RateLimitStore struct{ DB RateLimitDB }

var (
	_ ratelimit.Store  = (*RateLimitStore)(nil)
	_ ratelimit.Pruner = (*RateLimitStore)(nil)
	_ ratelimit.Lister = (*RateLimitStore)(nil)
)

// Take implements ratelimit.Store: it checks p and reports a full window
// as ratelimit.ErrFull with the count.
func (s *RateLimitStore) Take(ctx context.Context, p ratelimit.TakeParams) (int, error) {
	subject := fmt.Sprintf("rate limit %s window %d shard %d", p.Name, p.Window, p.Shard)
	if p.Max < 1 || p.Window < 0 || p.Shard < 0 || p.Name == "" {
		return 0, fmt.Errorf("%s: name, max ≥ 1, window and shard ≥ 0 required", subject)
	}
	t, err := s.DB.TakeUnit(ctx, p)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%s: %w", subject, err)
	case t.Full:
		return t.Count, fmt.Errorf("%s: %w", subject, ratelimit.ErrFull)
	}
	return t.Count, nil
}

// CheckSlot rejects slot parameters without a name or holder, or with a
// negative slot.
func CheckSlot(p ratelimit.SlotParams) error {
	if p.Name == "" || p.Slot < 0 || p.Holder == "" {
		return fmt.Errorf("rate limit %q slot %d: name, holder and slot ≥ 0 required", p.Name, p.Slot)
	}
	return nil
}

// Hold implements ratelimit.Store: a slot not given is ratelimit.ErrFull.
func (s *RateLimitStore) Hold(ctx context.Context, p ratelimit.SlotParams) error {
	return slotWrite(ctx, p, "hold", ratelimit.ErrFull, s.DB.HoldSlot)
}

// Free implements ratelimit.Store: a slot not freed is
// ratelimit.ErrNotHolder.
func (s *RateLimitStore) Free(ctx context.Context, p ratelimit.SlotParams) error {
	return slotWrite(ctx, p, "free", ratelimit.ErrNotHolder, s.DB.FreeSlot)
}

func slotWrite(ctx context.Context, p ratelimit.SlotParams, op string, refused error,
	write func(context.Context, ratelimit.SlotParams) (bool, error)) error {
	if err := CheckSlot(p); err != nil {
		return err
	}
	applied, err := write(ctx, p)
	switch {
	case err != nil:
		return fmt.Errorf("rate limit %s slot %d: %s: %w", p.Name, p.Slot, op, err)
	case !applied:
		return fmt.Errorf("rate limit %s slot %d: %w", p.Name, p.Slot, refused)
	}
	return nil
}

// PruneLimits implements ratelimit.Pruner: the counters whose window
// ended before now, and the slots free or run out for
// ratelimit.SlotIdle.
func (s *RateLimitStore) PruneLimits(ctx context.Context, now time.Time) (int, error) {
	n, err := s.DB.DeleteRunOut(ctx, Nanos(now), Nanos(now.Add(-ratelimit.SlotIdle)))
	if err != nil {
		return 0, fmt.Errorf("prune rate limits: %w", err)
	}
	return n, nil
}

// UsageAt is the bound of p's usage query: for slots, the time a hold
// must outlast (Nanos of p.Now); for a rate limit, the current window.
func UsageAt(p ratelimit.ListParams) int64 {
	if p.Limit.InFlight > 0 {
		return Nanos(p.Now)
	}
	return p.Limit.Window(p.Now)
}

// ListUsage implements ratelimit.Lister with the engine's usage query.
func (s *RateLimitStore) ListUsage(ctx context.Context, p ratelimit.ListParams) ([]ratelimit.Usage, error) {
	g := ratelimit.NewUsages(p)
	err := s.DB.ReadUsage(ctx, p, func(scan ScanFunc) error {
		var name, holder string
		var n, until int64
		if err := scan(&name, &n, &holder, &until); err != nil {
			return err
		}
		if p.Limit.InFlight > 0 {
			g.AddHold(name, ratelimit.Hold{Slot: int(n), Holder: holder, Until: Time(until)})
		} else {
			g.AddStarts(name, int(n))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rate limit %s: list usage: %w", p.Limit.Name, err)
	}
	return g.List(), nil
}
