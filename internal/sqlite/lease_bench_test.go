package sqlite

import (
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/lease"
)

var benchNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// BenchmarkLeaseAcquireRelease: acquire a free lease, release it (two
// conditional writes).
func BenchmarkLeaseAcquireRelease(b *testing.B) {
	store := NewLeaseStore(openLeaseTestDB(b))
	ctx := b.Context()
	for b.Loop() {
		l, err := store.Acquire(ctx, lease.AcquireParams{Job: "bench", Owner: "a", TTL: time.Minute, Now: benchNow})
		if err != nil {
			b.Fatal(err)
		}
		if err := store.Release(ctx, lease.ReleaseParams{Job: "bench", Owner: "a", Fence: l.Fence}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLeaseAcquireReentrant: the holder acquires its own lease again
// (one applied conditional write, as BenchmarkRawConditionalInsert in
// lab/bench/rawlease_test.go, in the lab module).
func BenchmarkLeaseAcquireReentrant(b *testing.B) {
	store := NewLeaseStore(openLeaseTestDB(b))
	ctx := b.Context()
	for b.Loop() {
		if _, err := store.Acquire(ctx, lease.AcquireParams{Job: "bench", Owner: "a", TTL: time.Minute, Now: benchNow}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLeaseAcquireContended: acquire a lease another owner holds (a
// refused write, then the holder read).
func BenchmarkLeaseAcquireContended(b *testing.B) {
	store := NewLeaseStore(openLeaseTestDB(b))
	ctx := b.Context()
	if _, err := store.Acquire(ctx, lease.AcquireParams{Job: "bench", Owner: "a", TTL: time.Hour, Now: benchNow}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		_, err := store.Acquire(ctx, lease.AcquireParams{Job: "bench", Owner: "b", TTL: time.Minute, Now: benchNow})
		if !errors.Is(err, lease.ErrHeld) {
			b.Fatalf("want ErrHeld, got %v", err)
		}
	}
}
