package ledger

import "context"

// Outcome is the result of one entry of a batched transition: the record
// and the error the single call (Claim, Complete) would have returned.
type Outcome struct {
	Item Item
	Err  error
}

// BatchClaimer is an optional ability of a Store: claiming several items
// in a few round trips instead of one per item (one pipelined batch of
// conditional statements on PostgreSQL). The consumer finds it by type
// assertion and uses it for the items of a batch that need no step
// between their vouch and their claim; a store without it is called once
// per item.
type BatchClaimer interface {
	// ClaimBatch claims each entry as Claim would, each conditioned on its
	// own item's state, owner, lease and attempt, and returns one Outcome
	// per entry, in order: an entry refused (ErrHeld, ErrTerminal, …)
	// fails alone, with its own record, and the others apply. An error of
	// the call as a whole (the database unreachable) is every entry's
	// error; none of them applied then, or, where the store cannot tell,
	// each is as after a Claim that returned that error.
	ClaimBatch(ctx context.Context, ps []ClaimParams) []Outcome
}

// BatchCompleter is an optional ability of a Store: completing several
// items in a few round trips. Found and used as BatchClaimer.
type BatchCompleter interface {
	// CompleteBatch completes each entry as Complete would (RUNNING under
	// its owner and attempt), and returns one Outcome per entry, in
	// order; errors as ClaimBatch's.
	CompleteBatch(ctx context.Context, ps []CompleteParams) []Outcome
}

// ItemRange is a range of a run's item names, First to Last inclusive (as
// ListItemRange reads one).
type ItemRange struct {
	First, Last string
}

// RangesLister is an optional ability of a Store: reading several ranges
// of a run's items in one round trip. The settle (package fanin) uses it
// to read the shards a batch's items ended in together.
type RangesLister interface {
	// ListItemRanges returns, for each range, in order, what
	// ListItemRange would.
	ListItemRanges(ctx context.Context, run RunID, ranges []ItemRange) ([][]Item, error)
}
