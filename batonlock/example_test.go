package batonlock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/batonhq/baton/batonlock"
)

// positions is the trading loop's downstream store: it takes a write only
// with a fence at least the newest it has seen for the key, so that a
// holder that lost its lock (paused, partitioned) cannot overwrite its
// successor's writes.
type positions struct {
	mu     sync.Mutex
	fences map[string]int64
	qty    map[string]int
}

func (p *positions) write(key string, fence int64, qty int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if fence < p.fences[key] {
		return fmt.Errorf("stale fence %d < %d", fence, p.fences[key])
	}
	p.fences[key], p.qty[key] = fence, qty
	return nil
}

// The ENTRY case: one lock per profile and symbol, held across a trading
// loop, each write fenced. A second instance fails fast while the first
// holds the lock, then takes it over; the first's late write is refused
// downstream.
func Example_entry() {
	dir, _ := os.MkdirTemp("", "batonlock")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	open := func(holder string) *batonlock.Locker {
		l, err := batonlock.Open(ctx, &batonlock.Options{
			Store: filepath.Join(dir, "baton.db"), Holder: holder,
			TTL: batonlock.DefaultTTL, Skew: batonlock.DefaultSkew,
		})
		if err != nil {
			panic(err)
		}
		return l
	}
	first, second := open("entry-1"), open("entry-2")
	defer first.Close()
	defer second.Close()
	store := &positions{fences: map[string]int64{}, qty: map[string]int{}}
	key := "entry/profile=alpha/symbol=EURUSD"

	lock, err := first.TryAcquire(ctx, key)
	if err != nil {
		panic(err)
	}
	for qty := 1; qty <= 3 && lock.Context().Err() == nil; qty++ { // the trading loop
		if err := store.write(key, lock.Fence(), qty); err != nil {
			panic(err)
		}
	}
	fmt.Println("entry-1 holds fence", lock.Fence(), "position", store.qty[key])

	_, err = second.TryAcquire(ctx, key)
	fmt.Println("entry-2:", errorsIs(err, batonlock.ErrHeld))

	// entry-1 stops without a clean shutdown; an operator frees its lock
	// (it is live: the override is explicit, and logged).
	_, err = second.ForceRelease(ctx, key, batonlock.ForceRelease{Owner: lock.Owner(), Fence: lock.Fence()})
	fmt.Println("release of a live holder:", errorsIs(err, batonlock.ErrLive))
	if _, err := second.ForceRelease(ctx, key, batonlock.ForceRelease{
		Owner: lock.Owner(), Fence: lock.Fence(), ForceLive: true, By: "oncall", Reason: "entry-1 is gone",
	}); err != nil {
		panic(err)
	}
	next, err := second.TryAcquire(ctx, key)
	if err != nil {
		panic(err)
	}
	fmt.Println("entry-2 holds fence", next.Fence(), store.write(key, next.Fence(), 10))
	fmt.Println("late write by entry-1:", store.write(key, lock.Fence(), 4))
	fmt.Println("entry-1 renews:", errorsIs(lock.Renew(ctx), batonlock.ErrLost))
	info, _ := second.Inspect(ctx, key)
	fmt.Println("holder", info.Holder, "contention", info.Contention, "escalated", info.Escalated)
	_ = next.Release(ctx)
	// Output:
	// entry-1 holds fence 1 position 3
	// entry-2: true
	// release of a live holder: true
	// entry-2 holds fence 2 <nil>
	// late write by entry-1: stale fence 1 < 2
	// entry-1 renews: true
	// holder entry-2 contention 1 escalated false
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
