package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/batonhq/baton/internal/ledger"
)

const pageColumns = `idx, items, final, resume, parent, at`

// PutPage implements ledger.Store: one INSERT that does nothing when the
// page exists, and then a read of the page in the same write.
func (s *LedgerStore) PutPage(ctx context.Context, p ledger.PutPageParams) (ledger.Page, error) {
	if err := ledger.CheckPage(p); err != nil {
		return ledger.Page{}, err
	}
	var pg ledger.Page
	var exists bool
	err := s.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		args := []any{sql.Named("run", p.Run.String()), sql.Named("idx", p.Index)}
		final := 0
		if p.Final {
			final = 1
		}
		var err error
		pg, err = scanPage(tx.QueryRowContext(ctx, `
			INSERT INTO item_pages (run, idx, items, final, resume, parent, at)
			VALUES (:run, :idx, :items, :final, :resume, :parent, :at)
			ON CONFLICT (run, idx) DO NOTHING
			RETURNING `+pageColumns, append(args, sql.Named("items", ledger.EncodePageItems(p.Items)),
			sql.Named("final", final), sql.Named("resume", p.Resume), sql.Named("parent", p.Parent), sql.Named("at", toNanos(p.Now)))...).Scan, p.Run)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		exists = true
		pg, err = scanPage(tx.QueryRowContext(ctx, `SELECT `+pageColumns+` FROM item_pages WHERE run = :run AND idx = :idx`, args...).Scan, p.Run)
		return err
	})
	subject := fmt.Sprintf("page %d of %s", p.Index, p.Run)
	switch {
	case err != nil:
		return ledger.Page{}, fmt.Errorf("%s: %w", subject, err)
	case exists:
		return pg, fmt.Errorf("%s: written already: %w", subject, ledger.ErrTerminal)
	}
	return pg, nil
}

// GetPage implements ledger.Store.
func (s *LedgerStore) GetPage(ctx context.Context, run ledger.RunID, index int) (ledger.Page, error) {
	pg, err := scanPage(s.db.sql.QueryRowContext(ctx, `SELECT `+pageColumns+` FROM item_pages WHERE run = :run AND idx = :idx`,
		sql.Named("run", run.String()), sql.Named("idx", index)).Scan, run)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Page{}, fmt.Errorf("page %d of %s: %w", index, run, ledger.ErrNotFound)
	}
	if err != nil {
		return ledger.Page{}, fmt.Errorf("page %d of %s: %w", index, run, err)
	}
	return pg, nil
}

// scanPage scans pageColumns of a page of run.
func scanPage(scan func(dest ...any) error, run ledger.RunID) (ledger.Page, error) {
	pg := ledger.Page{Run: run}
	var items []byte
	var final int
	var at int64
	if err := scan(&pg.Index, &items, &final, &pg.Resume, &pg.Parent, &at); err != nil {
		return ledger.Page{}, err
	}
	var err error
	if pg.Items, err = ledger.DecodePageItems(items); err != nil {
		return ledger.Page{}, err
	}
	pg.Final, pg.At = final == 1, fromNanos(at)
	return pg, nil
}
