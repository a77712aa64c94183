package sqlite

import (
	"database/sql"
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
// (one applied conditional write, as BenchmarkRawConditionalInsert).
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

// BenchmarkRawConditionalInsert is the reference for the lease benchmarks:
// the same single-row conditional UPSERT on a table of the same shape,
// autocommitted, through database/sql alone: parsed on every call (exec),
// and prepared once (prepared, as the lease store's statements are).
func BenchmarkRawConditionalInsert(b *testing.B) {
	db := openLeaseTestDB(b).SQL()
	if _, err := db.ExecContext(b.Context(), `CREATE TABLE raw_leases (
    job         TEXT PRIMARY KEY,
    owner       TEXT    NOT NULL DEFAULT '',
    fence       INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL DEFAULT 0,
    acquired_at INTEGER NOT NULL DEFAULT 0
) STRICT`); err != nil {
		b.Fatal(err)
	}
	const upsert = `
INSERT INTO raw_leases (job, owner, fence, expires_at, acquired_at)
VALUES (?1, ?2, 1, ?3, ?4)
ON CONFLICT (job) DO UPDATE SET
    owner = excluded.owner, fence = raw_leases.fence + 1,
    expires_at = excluded.expires_at, acquired_at = excluded.acquired_at
WHERE raw_leases.owner = '' OR raw_leases.owner = excluded.owner OR raw_leases.expires_at <= ?5`
	now := benchNow.UnixNano()
	run := func(b *testing.B, exec func(args ...any) (sql.Result, error)) {
		for b.Loop() {
			res, err := exec("bench", "a", now+int64(time.Minute), now, now)
			if err != nil {
				b.Fatal(err)
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				b.Fatalf("rows %d, err %v", n, err)
			}
		}
	}
	b.Run("exec", func(b *testing.B) {
		run(b, func(args ...any) (sql.Result, error) { return db.ExecContext(b.Context(), upsert, args...) })
	})
	b.Run("prepared", func(b *testing.B) {
		st, err := db.PrepareContext(b.Context(), upsert)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		run(b, func(args ...any) (sql.Result, error) { return st.ExecContext(b.Context(), args...) })
	})
}
