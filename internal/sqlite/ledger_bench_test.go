package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/ledger"
)

// The item benchmarks measure the consumer's hot path, and the raw
// benchmark the same database doing the least a conditional write can do,
// so that their ratio is what the ledger's conditions and bookkeeping cost.

var ledgerBenchRun = ledger.RunID{Job: "bench", Nominal: time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC), Generation: 1}

// BenchmarkItemClaimComplete claims and completes a new item per iteration.
func BenchmarkItemClaimComplete(b *testing.B) {
	store := NewLedgerStore(openLedgerTestDB(b))
	ctx := b.Context()
	now := ledgerBenchRun.Nominal
	result := []byte(`{"open":1.0841,"high":1.0845,"low":1.0839,"close":1.0842}`)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		key := ledger.ItemKey{Run: ledgerBenchRun, Asset: fmt.Sprintf("A%09d", i)}
		i++
		it, err := store.Claim(ctx, ledger.ClaimParams{Key: key, Owner: "bench", LeaseUntil: now.Add(time.Minute), Fence: 1, MaxAttempts: 5, Now: now})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := store.Complete(ctx, ledger.CompleteParams{Key: key, Owner: "bench", Attempt: it.Attempt, Result: result, Now: now}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkItemClaimDuplicate claims an item that already SUCCEEDED: the
// path of every duplicate delivery.
func BenchmarkItemClaimDuplicate(b *testing.B) {
	store := NewLedgerStore(openLedgerTestDB(b))
	ctx := b.Context()
	now := ledgerBenchRun.Nominal
	key := ledger.ItemKey{Run: ledgerBenchRun, Asset: "EURUSD"}
	it, err := store.Claim(ctx, ledger.ClaimParams{Key: key, Owner: "bench", LeaseUntil: now.Add(time.Minute), Fence: 1, Now: now})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := store.Complete(ctx, ledger.CompleteParams{Key: key, Owner: "bench", Attempt: it.Attempt, Result: []byte("ok"), Now: now}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := store.Claim(ctx, ledger.ClaimParams{Key: key, Owner: "bench", LeaseUntil: now.Add(time.Minute), Fence: 1, Now: now}); !errors.Is(err, ledger.ErrTerminal) {
			b.Fatalf("claim of a SUCCEEDED item: %v", err)
		}
	}
}

// BenchmarkItemHeartbeat extends the claim of one RUNNING item per
// iteration: the cost of a long item's heartbeat.
func BenchmarkItemHeartbeat(b *testing.B) {
	store := NewLedgerStore(openLedgerTestDB(b))
	ctx := b.Context()
	now := ledgerBenchRun.Nominal
	key := ledger.ItemKey{Run: ledgerBenchRun, Asset: "EURUSD"}
	it, err := store.Claim(ctx, ledger.ClaimParams{Key: key, Owner: "bench", LeaseUntil: now.Add(time.Minute), Fence: 1, Now: now})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		if _, err := store.Extend(ctx, ledger.ExtendParams{Key: key, Owner: "bench", Attempt: it.Attempt, LeaseUntil: now.Add(time.Minute), Now: now}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawConditionalInsertItem inserts a new row per iteration into a
// copy of the items table, with INSERT … ON CONFLICT DO NOTHING and no
// ledger code: the reference for the two benchmarks above. exec prepares
// the statement every time, prepared once (as the LedgerStore does).
func BenchmarkRawConditionalInsertItem(b *testing.B) {
	const insert = `
		INSERT INTO raw_items (run, asset, state, owner, attempt, lease_until, fence, error, created_at, started_at, finished_at, updated_at)
		VALUES (?, ?, 'RUNNING', 'bench', 1, ?, 1, '', ?, ?, 0, ?)
		ON CONFLICT (run, asset) DO NOTHING`
	bench := func(b *testing.B, exec func(db *DB, args ...any) (sql.Result, error)) {
		db := openLedgerTestDB(b)
		ctx := b.Context()
		var ddl string
		if err := db.SQL().QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE name = 'items'`).Scan(&ddl); err != nil {
			b.Fatal(err)
		}
		if _, err := db.SQL().ExecContext(ctx, strings.Replace(ddl, "items", "raw_items", 1)); err != nil {
			b.Fatal(err)
		}
		run, now := ledgerBenchRun.String(), toNanos(ledgerBenchRun.Nominal)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			asset := fmt.Sprintf("A%09d", i)
			i++
			res, err := exec(db, run, asset, now, now, now, now)
			if err != nil {
				b.Fatal(err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				b.Fatalf("inserted %d rows", n)
			}
		}
	}
	b.Run("exec", func(b *testing.B) {
		bench(b, func(db *DB, args ...any) (sql.Result, error) {
			return db.SQL().ExecContext(b.Context(), insert, args...)
		})
	})
	b.Run("prepared", func(b *testing.B) {
		var st *sql.Stmt
		bench(b, func(db *DB, args ...any) (sql.Result, error) {
			if st == nil {
				var err error
				if st, err = db.SQL().PrepareContext(b.Context(), insert); err != nil {
					return nil, err
				}
				b.Cleanup(func() { st.Close() })
			}
			return st.ExecContext(b.Context(), args...)
		})
	})
}
