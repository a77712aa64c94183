// Package ratelimit is the port for shared rate limits and the limiter
// built on it: named limits of N starts per interval, shared by every
// consumer of every process and host, kept on the same store as the
// ledger with conditional writes (no new service).
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

// Store keeps the counters of rate limit windows. Its methods may be
// called concurrently from several processes.
type Store interface {
	// Take adds one to counter (Name, Window, Shard) when it is below Max,
	// creating it at 1 when absent, in one conditional write, and returns
	// the new count. When the counter is at Max (or above, if Max was
	// lowered) it returns ErrFull and the count, writing nothing.
	Take(ctx context.Context, p TakeParams) (int, error)
}
