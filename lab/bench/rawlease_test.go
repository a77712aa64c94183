package bench

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/sqlite"
)

// BenchmarkRawConditionalInsert is the reference for the SQLite lease
// benchmarks (internal/sqlite/lease_bench_test.go): the single-row
// conditional UPSERT a lease acquisition makes, on a table of the same
// shape, autocommitted, through database/sql alone: parsed on every call
// (exec), and prepared once (prepared, as the lease store's statements
// are). It is the statement the bench report's raw reference runs.
func BenchmarkRawConditionalInsert(b *testing.B) {
	h, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "baton.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Close() })
	db := h.SQL()
	if _, err := db.ExecContext(b.Context(), RawLeasesDDL); err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC).UnixNano()
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
		run(b, func(args ...any) (sql.Result, error) {
			return db.ExecContext(b.Context(), RawLeaseUpsert, args...)
		})
	})
	b.Run("prepared", func(b *testing.B) {
		st, err := db.PrepareContext(b.Context(), RawLeaseUpsert)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		run(b, func(args ...any) (sql.Result, error) { return st.ExecContext(b.Context(), args...) })
	})
}
