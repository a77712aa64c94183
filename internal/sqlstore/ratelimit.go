package sqlstore

import (
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

// Take implements ratelimit.Store's Take over take, the engine's
// conditional upsert (and its read of the count when refused): it checks
// p and reports a full window as ratelimit.ErrFull with the count.
func Take(p ratelimit.TakeParams, take func() (RateTake, error)) (int, error) {
	subject := fmt.Sprintf("rate limit %s window %d shard %d", p.Name, p.Window, p.Shard)
	if p.Max < 1 || p.Window < 0 || p.Shard < 0 || p.Name == "" {
		return 0, fmt.Errorf("%s: name, max ≥ 1, window and shard ≥ 0 required", subject)
	}
	t, err := take()
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

// Hold implements ratelimit.Store's Hold over hold, the engine's upsert
// conditioned on the slot being free, run out or the holder's: applied
// false (nothing written) is ratelimit.ErrFull.
func Hold(p ratelimit.SlotParams, hold func() (applied bool, err error)) error {
	return slotWrite(p, "hold", ratelimit.ErrFull, hold)
}

// Free implements ratelimit.Store's Free over free, the engine's update
// conditioned on the holder: applied false is ratelimit.ErrNotHolder. (An
// engine that sent the update again after an unknown outcome reports it
// applied: the slot is not the holder's either way.)
func Free(p ratelimit.SlotParams, free func() (applied bool, err error)) error {
	return slotWrite(p, "free", ratelimit.ErrNotHolder, free)
}

func slotWrite(p ratelimit.SlotParams, op string, refused error, write func() (bool, error)) error {
	if err := CheckSlot(p); err != nil {
		return err
	}
	applied, err := write()
	switch {
	case err != nil:
		return fmt.Errorf("rate limit %s slot %d: %s: %w", p.Name, p.Slot, op, err)
	case !applied:
		return fmt.Errorf("rate limit %s slot %d: %w", p.Name, p.Slot, refused)
	}
	return nil
}
