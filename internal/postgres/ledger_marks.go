package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/sqlstore"
)

// ListItemRange implements ledger.Store: a range scan of the items'
// primary key (asset compares byte-wise, COLLATE "C"), so it reads the
// shard's rows only.
func (s *LedgerStore) ListItemRange(ctx context.Context, run ledger.RunID, first, last string) ([]ledger.Item, error) {
	var items []ledger.Item
	err := s.db.retry(ctx, nil, func() error {
		rows, err := s.db.pool.Query(ctx, `SELECT `+sqlstore.ItemColumns+` FROM baton_items
		WHERE run = $1 AND asset >= $2 AND asset <= $3 ORDER BY asset`, run.String(), first, last)
		if err != nil {
			return err
		}
		items, err = collectItems(rows, run)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list items of %s from %q to %q: %w", run, first, last, translate(err))
	}
	return items, nil
}

// collectItems reads the items of run that rows return (ItemColumns)
// and closes rows: nil for none. Every row is scanned into the same
// destinations, and the item copied out of them.
func collectItems(rows pgx.Rows, run ledger.RunID) ([]ledger.Item, error) {
	defer rows.Close()
	var r sqlstore.ItemRow
	dest := scanInPlace(r.Dest())
	var items []ledger.Item
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		items = append(items, r.Item(run))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return items, nil
}

// MarkDone implements ledger.Store: one INSERT … ON CONFLICT DO NOTHING,
// sent in one batch with a read of the mark. The read runs after the
// insert in the same transaction, so it sees the mark whoever wrote it
// (a concurrent insert of the same mark waits for the first to commit,
// then does nothing). A re-send after an unknown outcome finds the mark
// its first send wrote: the same counts at the same Now are its success.
func (s *LedgerStore) MarkDone(ctx context.Context, p ledger.MarkParams) (ledger.Mark, error) {
	return sqlstore.MarkDone(p, func() (sqlstore.MarkWrite, error) {
		var a attempts
		var w sqlstore.MarkWrite
		err := s.db.batch(ctx, &a, func(b *pgx.Batch) {
			b.Queue(`INSERT INTO baton_marks (run, level, idx, succeeded, dead, cancelled, at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (run, level, idx) DO NOTHING RETURNING `+sqlstore.MarkColumns,
				p.Run.String(), p.Level, p.Index, p.Succeeded, p.Dead, p.Cancelled, toNanos(p.Now))
			b.Queue(`SELECT `+sqlstore.MarkColumns+` FROM baton_marks WHERE run = $1 AND level = $2 AND idx = $3`, p.Run.String(), p.Level, p.Index)
		}, func(br pgx.BatchResults) error {
			_, err := sqlstore.ScanMark(br.QueryRow().Scan, p.Run)
			w.Existed = errors.Is(err, pgx.ErrNoRows)
			if err != nil && !w.Existed {
				return err
			}
			w.Mark, err = sqlstore.ScanMark(br.QueryRow().Scan, p.Run)
			return err
		})
		w.Unsure = a.unsure
		return w, translate(err)
	})
}

// ListMarks implements ledger.Store.
func (s *LedgerStore) ListMarks(ctx context.Context, run ledger.RunID, level, group int) ([]ledger.Mark, error) {
	marks, err := queryAll(ctx, s.db, `SELECT `+sqlstore.MarkColumns+` FROM baton_marks
		WHERE run = $1 AND level = $2 AND idx >= $3 AND idx < $4 ORDER BY idx`,
		[]any{run.String(), level, group * ledger.MarkGroup, (group + 1) * ledger.MarkGroup},
		func(rows pgx.Rows) (ledger.Mark, error) { return sqlstore.ScanMark(rows.Scan, run) })
	if err != nil {
		return nil, fmt.Errorf("list marks of %s level %d group %d: %w", run, level, group, translate(err))
	}
	return marks, nil
}

var _ ledger.RangesLister = (*LedgerStore)(nil)

// ListItemRanges implements ledger.RangesLister: the ranges' reads in one
// pipelined batch (one round trip).
func (s *LedgerStore) ListItemRanges(ctx context.Context, run ledger.RunID, ranges []ledger.ItemRange) ([][]ledger.Item, error) {
	out := make([][]ledger.Item, len(ranges))
	if len(ranges) == 0 {
		return out, nil
	}
	err := s.db.batch(ctx, nil, func(b *pgx.Batch) {
		for _, r := range ranges {
			b.Queue(`SELECT `+sqlstore.ItemColumns+` FROM baton_items
				WHERE run = $1 AND asset >= $2 AND asset <= $3 ORDER BY asset`, run.String(), r.First, r.Last)
		}
	}, func(br pgx.BatchResults) error {
		for i := range ranges {
			rows, err := br.Query()
			if err != nil {
				return err
			}
			items, err := collectItems(rows, run)
			if err != nil {
				return err
			}
			if len(items) > 0 { // none: nil, as ListItemRange
				out[i] = items
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %d item ranges of %s: %w", len(ranges), run, translate(err))
	}
	return out, nil
}
