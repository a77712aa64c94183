package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/sqlstore"
)

// ListItemRange implements ledger.Store: a range of the items table's
// primary key, so it reads the shard's rows only.
func (s *LedgerStore) ListItemRange(ctx context.Context, run ledger.RunID, first, last string) ([]ledger.Item, error) {
	rows, err := s.db.sql.QueryContext(ctx,
		`SELECT `+sqlstore.ItemColumns+` FROM items WHERE run = :run AND asset >= :first AND asset <= :last ORDER BY asset`,
		sql.Named("run", run.String()), sql.Named("first", first), sql.Named("last", last))
	if err != nil {
		return nil, fmt.Errorf("list items of %s from %q to %q: %w", run, first, last, err)
	}
	defer rows.Close()
	var items []ledger.Item
	for rows.Next() {
		it, err := sqlstore.ScanItem(rows.Scan, run)
		if err != nil {
			return nil, fmt.Errorf("list items of %s from %q to %q: %w", run, first, last, err)
		}
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list items of %s from %q to %q: %w", run, first, last, err)
	}
	return items, nil
}

// MarkDone implements ledger.Store: one INSERT that does nothing when the
// mark exists, and then a read of the mark in the same write.
func (s *LedgerStore) MarkDone(ctx context.Context, p ledger.MarkParams) (ledger.Mark, error) {
	return sqlstore.MarkDone(p, func() (sqlstore.MarkWrite, error) {
		var w sqlstore.MarkWrite
		err := s.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
			args := []any{sql.Named("run", p.Run.String()), sql.Named("level", p.Level), sql.Named("idx", p.Index)}
			var err error
			w.Mark, err = sqlstore.ScanMark(tx.QueryRowContext(ctx, `
				INSERT INTO marks (run, level, idx, succeeded, dead, cancelled, at)
				VALUES (:run, :level, :idx, :succeeded, :dead, :cancelled, :at)
				ON CONFLICT (run, level, idx) DO NOTHING
				RETURNING `+sqlstore.MarkColumns, append(args, sql.Named("succeeded", p.Succeeded), sql.Named("dead", p.Dead),
				sql.Named("cancelled", p.Cancelled), sql.Named("at", toNanos(p.Now)))...).Scan, p.Run)
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			w.Existed = true
			w.Mark, err = sqlstore.ScanMark(tx.QueryRowContext(ctx, `SELECT `+sqlstore.MarkColumns+` FROM marks WHERE run = :run AND level = :level AND idx = :idx`, args...).Scan, p.Run)
			return err
		})
		return w, err // one writer: an outcome is never unknown
	})
}

// ListMarks implements ledger.Store.
func (s *LedgerStore) ListMarks(ctx context.Context, run ledger.RunID, level, group int) ([]ledger.Mark, error) {
	rows, err := s.db.sql.QueryContext(ctx,
		`SELECT `+sqlstore.MarkColumns+` FROM marks WHERE run = :run AND level = :level AND idx >= :from AND idx < :to ORDER BY idx`,
		sql.Named("run", run.String()), sql.Named("level", level),
		sql.Named("from", group*ledger.MarkGroup), sql.Named("to", (group+1)*ledger.MarkGroup))
	if err != nil {
		return nil, fmt.Errorf("list marks of %s level %d group %d: %w", run, level, group, err)
	}
	defer rows.Close()
	var marks []ledger.Mark
	for rows.Next() {
		m, err := sqlstore.ScanMark(rows.Scan, run)
		if err != nil {
			return nil, fmt.Errorf("list marks of %s level %d group %d: %w", run, level, group, err)
		}
		marks = append(marks, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list marks of %s level %d group %d: %w", run, level, group, err)
	}
	return marks, nil
}
