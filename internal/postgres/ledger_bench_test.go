package postgres

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/ledger"
)

// A claim and a completion of a new item, against two bare conditional
// writes (BenchmarkRawUpsert): the ledger's hot path costs about the two
// writes it makes.
func BenchmarkClaimComplete(b *testing.B) {
	db := openTestDB(b)
	s := NewLedgerStore(db)
	run := ledger.RunID{Job: "bench", Nominal: time.Now().UTC().Truncate(time.Minute), Generation: 1}
	var seq atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := ledger.ItemKey{Run: run, Asset: fmt.Sprintf("A%d", seq.Add(1))}
			now := time.Now()
			it, err := s.Claim(b.Context(), ledger.ClaimParams{Key: key, Owner: "bench", LeaseUntil: now.Add(time.Minute), Fence: 1, MaxAttempts: 5, Now: now})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.Complete(b.Context(), ledger.CompleteParams{Key: key, Owner: "bench", Attempt: it.Attempt, Now: now}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRawUpsert makes two bare INSERT … ON CONFLICT … WHERE per
// operation, the reference of BenchmarkClaimComplete.
func BenchmarkRawUpsert(b *testing.B) {
	db := openTestDB(b)
	_, err := db.pool.Exec(b.Context(), `CREATE TABLE raw (job text primary key, owner text, fence bigint, expires_at bigint, acquired_at bigint)`)
	if err != nil {
		b.Fatal(err)
	}
	var seq atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			for range 2 {
				now := time.Now().UnixNano()
				_, err := db.pool.Exec(b.Context(), `INSERT INTO raw AS l (job, owner, fence, expires_at, acquired_at) VALUES ($1, $2, 1, $3, $4)
ON CONFLICT (job) DO UPDATE SET owner = excluded.owner, fence = l.fence + 1 WHERE l.owner = '' OR l.expires_at <= $5`, fmt.Sprint("k", seq.Add(1)), "o", now, now, now)
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
