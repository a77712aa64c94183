package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/sqlstore"
)

const pageColumns = `idx, items, final, resume, parent, at`

// PutPage implements ledger.Store: one INSERT … ON CONFLICT DO NOTHING,
// sent in one batch with a read of the page (as MarkDone, whose re-send
// after an unknown outcome this shares: the page as given, at the same
// Now, is its success).
func (s *LedgerStore) PutPage(ctx context.Context, p ledger.PutPageParams) (ledger.Page, error) {
	if err := ledger.CheckPage(p); err != nil {
		return ledger.Page{}, err
	}
	subject := fmt.Sprintf("page %d of %s", p.Index, p.Run)
	var a attempts
	var pg ledger.Page
	var exists bool
	items := ledger.EncodePageItems(p.Items)
	err := s.db.batch(ctx, &a, func(b *pgx.Batch) {
		b.Queue(`INSERT INTO baton_item_pages (run, idx, items, final, resume, parent, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (run, idx) DO NOTHING RETURNING `+pageColumns,
			p.Run.String(), p.Index, items, p.Final, p.Resume, p.Parent, toNanos(p.Now))
		b.Queue(`SELECT `+pageColumns+` FROM baton_item_pages WHERE run = $1 AND idx = $2`, p.Run.String(), p.Index)
	}, func(br pgx.BatchResults) error {
		_, err := scanPage(br.QueryRow().Scan, p.Run)
		exists = errors.Is(err, pgx.ErrNoRows)
		if err != nil && !exists {
			return err
		}
		pg, err = scanPage(br.QueryRow().Scan, p.Run)
		return err
	})
	mine := err == nil && sqlstore.SameTime(pg.At, p.Now) && pg.Final == p.Final && pg.Resume == p.Resume && pg.Parent == p.Parent &&
		bytes.Equal(ledger.EncodePageItems(pg.Items), items)
	switch {
	case err != nil:
		return ledger.Page{}, fmt.Errorf("%s: %w", subject, translate(err))
	case exists && !(a.unsure && mine):
		return pg, fmt.Errorf("%s: written already: %w", subject, ledger.ErrTerminal)
	}
	return pg, nil
}

// GetPage implements ledger.Store.
func (s *LedgerStore) GetPage(ctx context.Context, run ledger.RunID, index int) (ledger.Page, error) {
	pg, err := scanPage(s.db.queryRow(ctx, nil, `SELECT `+pageColumns+` FROM baton_item_pages WHERE run = $1 AND idx = $2`,
		run.String(), index).Scan, run)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.Page{}, fmt.Errorf("page %d of %s: %w", index, run, ledger.ErrNotFound)
	}
	if err != nil {
		return ledger.Page{}, fmt.Errorf("page %d of %s: %w", index, run, translate(err))
	}
	return pg, nil
}

func scanPage(scan func(dest ...any) error, run ledger.RunID) (ledger.Page, error) {
	pg := ledger.Page{Run: run}
	var items []byte
	var at int64
	if err := scan(&pg.Index, &items, &pg.Final, &pg.Resume, &pg.Parent, &at); err != nil {
		return ledger.Page{}, err
	}
	var err error
	if pg.Items, err = ledger.DecodePageItems(items); err != nil {
		return ledger.Page{}, err
	}
	pg.At = fromNanos(at)
	return pg, nil
}
