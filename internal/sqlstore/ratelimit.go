package sqlstore

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/internal/ratelimit"
)

// RateTake is the outcome of an engine's take of a rate limit's unit: the
// window's count after the take, or, when the window was full (Full), the
// count that refused it.
type RateTake struct {
	Count int
	Full  bool
}

// RateLimitDB is what RateLimits needs of an engine: its statements on
// the counters and slots, run as the engine runs them, errors translated.
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
}

// RateLimits is ratelimit.Store's Take, Hold and Free over an engine's
// RateLimitDB: an engine's store embeds it.
type RateLimits struct{ DB RateLimitDB }

// Take implements ratelimit.Store: it checks p and reports a full window
// as ratelimit.ErrFull with the count.
func (s RateLimits) Take(ctx context.Context, p ratelimit.TakeParams) (int, error) {
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
func (s RateLimits) Hold(ctx context.Context, p ratelimit.SlotParams) error {
	return slotWrite(ctx, p, "hold", ratelimit.ErrFull, s.DB.HoldSlot)
}

// Free implements ratelimit.Store: a slot not freed is
// ratelimit.ErrNotHolder.
func (s RateLimits) Free(ctx context.Context, p ratelimit.SlotParams) error {
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
