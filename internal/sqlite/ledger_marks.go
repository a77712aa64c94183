package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/batonhq/baton/internal/ledger"
)

// ListItemRange implements ledger.Store: a range of the items table's
// primary key, so it reads the shard's rows only.
func (s *LedgerStore) ListItemRange(ctx context.Context, run ledger.RunID, first, last string) ([]ledger.Item, error) {
	rows, err := s.db.sql.QueryContext(ctx,
		`SELECT `+ledgerItemColumns+` FROM items WHERE run = :run AND asset >= :first AND asset <= :last ORDER BY asset`,
		sql.Named("run", run.String()), sql.Named("first", first), sql.Named("last", last))
	if err != nil {
		return nil, fmt.Errorf("list items of %s from %q to %q: %w", run, first, last, err)
	}
	defer rows.Close()
	var items []ledger.Item
	for rows.Next() {
		it, err := scanLedgerItem(rows.Scan, run)
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
	if err := validMark(p); err != nil {
		return ledger.Mark{}, err
	}
	var m ledger.Mark
	var exists bool
	err := s.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		args := []any{sql.Named("run", p.Run.String()), sql.Named("level", p.Level), sql.Named("idx", p.Index)}
		var err error
		m, err = scanMark(tx.QueryRowContext(ctx, `
			INSERT INTO marks (run, level, idx, succeeded, dead, cancelled, at)
			VALUES (:run, :level, :idx, :succeeded, :dead, :cancelled, :at)
			ON CONFLICT (run, level, idx) DO NOTHING
			RETURNING `+markColumns, append(args, sql.Named("succeeded", p.Succeeded), sql.Named("dead", p.Dead),
			sql.Named("cancelled", p.Cancelled), sql.Named("at", toNanos(p.Now)))...).Scan, p.Run)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		exists = true
		m, err = scanMark(tx.QueryRowContext(ctx, `SELECT `+markColumns+` FROM marks WHERE run = :run AND level = :level AND idx = :idx`, args...).Scan, p.Run)
		return err
	})
	subject := fmt.Sprintf("mark %s level %d index %d", p.Run, p.Level, p.Index)
	switch {
	case err != nil:
		return ledger.Mark{}, fmt.Errorf("%s: %w", subject, err)
	case exists:
		return m, fmt.Errorf("%s: written already: %w", subject, ledger.ErrTerminal)
	}
	return m, nil
}

// ListMarks implements ledger.Store.
func (s *LedgerStore) ListMarks(ctx context.Context, run ledger.RunID, level, group int) ([]ledger.Mark, error) {
	rows, err := s.db.sql.QueryContext(ctx,
		`SELECT `+markColumns+` FROM marks WHERE run = :run AND level = :level AND idx >= :from AND idx < :to ORDER BY idx`,
		sql.Named("run", run.String()), sql.Named("level", level),
		sql.Named("from", group*ledger.MarkGroup), sql.Named("to", (group+1)*ledger.MarkGroup))
	if err != nil {
		return nil, fmt.Errorf("list marks of %s level %d group %d: %w", run, level, group, err)
	}
	defer rows.Close()
	var marks []ledger.Mark
	for rows.Next() {
		m, err := scanMark(rows.Scan, run)
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

const markColumns = `level, idx, succeeded, dead, cancelled, at`

// scanMark scans markColumns of a mark of run.
func scanMark(scan func(dest ...any) error, run ledger.RunID) (ledger.Mark, error) {
	m := ledger.Mark{Run: run}
	var at int64
	if err := scan(&m.Level, &m.Index, &m.Succeeded, &m.Dead, &m.Cancelled, &at); err != nil {
		return ledger.Mark{}, err
	}
	m.At = fromNanos(at)
	return m, nil
}

// validMark reports which of p's numbers is negative, if any.
func validMark(p ledger.MarkParams) error {
	for _, f := range []struct {
		name string
		v    int
	}{{"level", p.Level}, {"index", p.Index}, {"succeeded", p.Succeeded}, {"dead", p.Dead}, {"cancelled", p.Cancelled}} {
		if f.v < 0 {
			return fmt.Errorf("mark %s: %s %d is negative", p.Run, f.name, f.v)
		}
	}
	return nil
}
