package queue

import (
	"context"
	"fmt"
)

// BatchDeleter is an optional ability of a Receiver: deleting several
// received messages in one call (SQS DeleteMessageBatch; one statement on
// SQLite). Callers find it by type assertion; DeleteAll uses it when the
// Receiver has it.
type BatchDeleter interface {
	// DeleteBatch removes the messages received with handles, as Delete
	// would remove each. It takes 1..MaxBatch handles, none twice. It
	// returns nil when every message was deleted; a *BatchError listing the
	// handles that were not (EntryError.ID is the handle, and its Err
	// matches ErrInvalidReceipt where Delete's would), the others being
	// deleted; ErrBatchTooLarge, deleting nothing, when handles breaks the
	// limits; or another error when the call failed as a whole (some
	// messages may have been deleted).
	DeleteBatch(ctx context.Context, handles []string) error
}

// CheckHandles returns an error matching ErrBatchTooLarge when handles
// breaks the limits of DeleteBatch: none, more than MaxBatch, or one
// handle twice. Adapters call it before deleting anything.
func CheckHandles(handles []string) error {
	if len(handles) == 0 {
		return fmt.Errorf("empty batch: %w", ErrBatchTooLarge)
	}
	if len(handles) > MaxBatch {
		return fmt.Errorf("%d handles, at most %d: %w", len(handles), MaxBatch, ErrBatchTooLarge)
	}
	for i, h := range handles {
		for _, prev := range handles[:i] {
			if prev == h {
				return fmt.Errorf("receipt handle %q given twice: %w", h, ErrBatchTooLarge)
			}
		}
	}
	return nil
}

// DeleteAll deletes the messages received with handles (at most
// BatchLimit(r), none twice): with one DeleteBatch call when r is a BatchDeleter, else
// with one Delete per handle. It returns nil when every message was
// deleted, and otherwise an error as DeleteBatch's: a *BatchError listing
// the handles that were not deleted (with one Delete per handle, each
// handle's own error), ErrBatchTooLarge, or the error of the call.
func DeleteAll(ctx context.Context, r Receiver, handles []string) error {
	if len(handles) == 0 {
		return nil
	}
	if bd, ok := r.(BatchDeleter); ok {
		return bd.DeleteBatch(ctx, handles)
	}
	if err := CheckHandles(handles); err != nil {
		return err
	}
	var failed []EntryError
	for _, h := range handles {
		if err := r.Delete(ctx, h); err != nil {
			failed = append(failed, EntryError{ID: h, Err: err})
		}
	}
	if len(failed) > 0 {
		return &BatchError{Failed: failed}
	}
	return nil
}

// LargeBatches is an optional ability of a queue whose SendBatch,
// Receive and DeleteBatch (BatchDeleter) take more than MaxBatch messages
// at once (PostgreSQL: one statement whatever the count). Found by type
// assertion (BatchLimit): SendAll and the poller use it; every other
// queue takes at most MaxBatch. MaxBatchBytes bounds a send all the same.
type LargeBatches interface {
	// MaxBatchSize is the most messages one SendBatch sends, one Receive
	// returns and one DeleteBatch deletes: MaxBatch or more.
	MaxBatchSize() int
}

// BatchLimit is the most messages q (a Sender or a Receiver) sends,
// receives and deletes at once: its MaxBatchSize when it has
// LargeBatches, else MaxBatch.
func BatchLimit(q any) int {
	if lb, ok := q.(LargeBatches); ok {
		return max(lb.MaxBatchSize(), MaxBatch)
	}
	return MaxBatch
}

// CheckHandlesUpTo is CheckHandles for an adapter that deletes up to most
// handles at once (LargeBatches).
func CheckHandlesUpTo(handles []string, most int) error {
	if len(handles) > most {
		return fmt.Errorf("%d handles, at most %d: %w", len(handles), most, ErrBatchTooLarge)
	}
	if len(handles) <= MaxBatch {
		return CheckHandles(handles)
	}
	seen := make(map[string]bool, len(handles))
	for _, h := range handles {
		if seen[h] {
			return fmt.Errorf("receipt handle %q given twice: %w", h, ErrBatchTooLarge)
		}
		seen[h] = true
	}
	return nil
}
