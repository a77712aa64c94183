// Package bars is the port for the reference workload's store of 1-minute
// OHLC bars, keyed by (asset, minute).
//
// Writes are fenced: each bar carries the (Fence, Attempt) of the item that
// wrote it, and a write is accepted only when its (Fence, Attempt) is at
// least the stored one, compared fence first. Fence is the writer's coarse
// fencing token and must not decrease across an item's attempts: the
// reference workload uses the run generation. A stale worker (an older
// attempt, or an older generation) cannot overwrite a newer write.
//
// Implementations must pass internal/bars/barstest.
package bars

import (
	"context"
	"errors"
	"time"
)

var (
	// ErrStale: the stored bar has a higher (Fence, Attempt); nothing written.
	ErrStale = errors.New("stale bar write")
	// ErrNotFound: no bar for (asset, minute).
	ErrNotFound = errors.New("bar not found")
)

// Bar is one asset's OHLC for one minute.
type Bar struct {
	Asset                  string
	Minute                 time.Time // start of the minute, UTC
	Open, High, Low, Close float64
	Fence                  int64
	Attempt                int
	WrittenAt              time.Time
}

// Newer reports whether (fence, attempt) orders after (b.Fence, b.Attempt).
func (b Bar) Newer(fence int64, attempt int) bool {
	return fence > b.Fence || (fence == b.Fence && attempt > b.Attempt)
}

// Store holds bars. Methods may be called concurrently.
type Store interface {
	// Put writes b in one conditional write: when there is no bar for
	// (b.Asset, b.Minute), or the stored bar's (Fence, Attempt) is at most
	// b's. Otherwise it returns ErrStale and writes nothing.
	Put(ctx context.Context, b Bar) error
	// Get returns the bar for (asset, minute) or ErrNotFound.
	Get(ctx context.Context, asset string, minute time.Time) (Bar, error)
}
