package queue

import "fmt"

// CheckBatch returns an error matching ErrBatchTooLarge when msgs breaks
// the limits of SendBatch: no entries, more than MaxBatch, more than
// MaxBatchBytes in all, or an entry id used twice. Adapters call it before
// sending anything.
func CheckBatch(msgs []Message) error {
	return CheckBatchUpTo(msgs, MaxBatch)
}

// CheckBatchUpTo is CheckBatch for an adapter that sends up to most
// messages at once (LargeBatches).
func CheckBatchUpTo(msgs []Message, most int) error {
	if len(msgs) == 0 {
		return fmt.Errorf("empty batch: %w", ErrBatchTooLarge)
	}
	if len(msgs) > most {
		return fmt.Errorf("%d entries, at most %d: %w", len(msgs), most, ErrBatchTooLarge)
	}
	size := 0
	ids := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		if ids[m.ID] {
			return fmt.Errorf("entry id %q used twice: %w", m.ID, ErrBatchTooLarge)
		}
		ids[m.ID] = true
		if m.Delay < 0 || m.Delay > MaxSendDelay {
			return fmt.Errorf("entry %q: delay %s, want 0 to %s: %w", m.ID, m.Delay, MaxSendDelay, ErrBatchTooLarge)
		}
		size += m.Size()
	}
	if size > MaxBatchBytes {
		return fmt.Errorf("%d bytes, at most %d: %w", size, MaxBatchBytes, ErrBatchTooLarge)
	}
	return nil
}
