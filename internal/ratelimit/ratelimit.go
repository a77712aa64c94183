// Package ratelimit is the port for shared rate limits and the limiter
// built on it: named limits of N starts per interval, or of M in flight,
// shared by every consumer of every process and host, kept on the same
// store as the ledger with conditional writes (no new service).
//
// # How a limit is kept
//
// Time is cut into windows of the limit's interval (window w covers
// [w·interval, (w+1)·interval) since the Unix epoch), and a window has a
// counter record per shard. A start takes one unit of a window's counter
// in one conditional write (Store.Take: count < max → count+1); when
// every shard of the window is full, the caller waits for the next
// window. So no window ever grants more than the limit, and over any span
// of whole windows the observed rate is at most the limit; a caller
// waiting for the next window starts within it, so a saturated limit is
// used to within its shards' rounding.
//
// # Hot keys
//
// On DynamoDB a partition key value serves about 1,000 write units per
// second, and one counter record per window is one partition key: a limit
// of a few hundred starts per second would make it hot (each start is a
// write, and each refused attempt too). A Limit therefore splits into
// Shards counter records per window, each holding Starts/Shards of the
// window (the remainder spread over the first ones): a caller takes from a
// shard picked at random and, refused, tries the others in turn. With
// Shards = ceil(Starts per second / 250) no record takes more than about
// 250 granted writes per second plus its refusals, well under the
// partition limit; the limit as a whole still grants at most Starts per
// window. The embedded store has no partition limit; shards cost it
// nothing but the extra rows.
//
// # In-flight limits
//
// A limit of M in flight has M slot records. A holder takes a slot in one
// conditional write (Store.Hold: free, expired or already the holder's →
// the holder's until Until) and gives it back when its work ends
// (Store.Free, conditioned on the holder); a holder that crashed without
// freeing its slot loses it at Until, so a slot is never lost for longer
// than one hold. Until is the holder's own lease (an item's lease, renewed
// by its heartbeat with a Hold of the same holder), so no two live holders
// ever share a slot and at most M hold one at any time. Each slot is a
// record (a partition key on DynamoDB) of its own: M holders write M keys.
//
// Implementations must pass the conformance suite in
// internal/ratelimit/ratelimittest.
package ratelimit

import (
	"context"
	"errors"
	"time"
)

// ErrFull: the window's counter reached its maximum (Take).
var ErrFull = errors.New("rate limit window full")

// TakeParams are the inputs of Store.Take.
type TakeParams struct {
	Name   string // the limit's name (baton.ValidName)
	Window int64  // the window's index (≥ 0)
	Shard  int    // the counter's shard in the window (≥ 0)
	Max    int    // the counter's maximum (≥ 1)
	// Expires is when the counter may be removed (after its window
	// ended): DynamoDB's TTL, the embedded store's own cleanup.
	Expires time.Time
}

// ErrNotHolder: the slot is not held by the caller (Free).
var ErrNotHolder = errors.New("rate limit slot not held by the caller")

// SlotParams are the inputs of Store.Hold and Store.Free.
type SlotParams struct {
	Name   string // the limit's name (baton.ValidName)
	Slot   int    // the slot (≥ 0)
	Holder string // who holds it (non-empty)
	// Until is when the hold ends unless renewed (Hold); the slot is free
	// for anyone from then on.
	Until time.Time
	Now   time.Time // the caller's time, which Until is compared with
}

// Pruner is an optional ability of a Store that keeps no time to live of
// its own (the embedded store, PostgreSQL; DynamoDB removes its records
// by TTL): removing the records of idle limits and keys, so that keys
// without number (a keyed limit's hosts, tenants) do not grow the store
// without bound.
type Pruner interface {
	// PruneLimits removes the counters whose window ended before now
	// (their Expires), and the slots free or run out for more than
	// SlotIdle at now; it returns how many records it removed. A slot
	// removed is free, as a freed one is.
	PruneLimits(ctx context.Context, now time.Time) (int, error)
}

// SlotIdle is how long a free or run-out slot record is kept before
// PruneLimits removes it.
const SlotIdle = time.Hour

// Store keeps the counters of rate limit windows and the slots of
// in-flight limits. Its methods may be
// called concurrently from several processes.
type Store interface {
	// Take adds one to counter (Name, Window, Shard) when it is below Max,
	// creating it at 1 when absent, in one conditional write, and returns
	// the new count. When the counter is at Max (or above, if Max was
	// lowered) it returns ErrFull and the count, writing nothing.
	Take(ctx context.Context, p TakeParams) (int, error)

	// Hold takes slot (Name, Slot) for Holder until Until in one
	// conditional write when it is absent, free (freed, or its Until at or
	// before Now) or held by Holder already (a renewal). When another
	// holder's hold is live it returns ErrFull, writing nothing.
	Hold(ctx context.Context, p SlotParams) error

	// Free gives slot (Name, Slot) back when Holder is its holder (its
	// hold live or run out), in one conditional write: it is free for
	// anyone at once. It returns ErrNotHolder, writing nothing, when the
	// slot is absent, freed or another holder's (Until and Now are not
	// read).
	Free(ctx context.Context, p SlotParams) error
}
