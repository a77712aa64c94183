package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/bars"
)

// BarsStore implements bars.Store on the database's bars table.
type BarsStore struct {
	db *DB
}

var _ bars.Store = (*BarsStore)(nil)

// NewBarsStore returns the bars store of db.
func NewBarsStore(db *DB) *BarsStore { return &BarsStore{db: db} }

// Put writes b in one conditional upsert: it inserts the bar, or replaces
// the stored one when (b.Fence, b.Attempt) is at least the stored (fence,
// attempt). It returns bars.ErrStale when no row changed.
func (s *BarsStore) Put(ctx context.Context, b bars.Bar) error {
	done, err := s.db.write(ctx)
	if err != nil {
		return fmt.Errorf("put bar %s %s: %w", b.Asset, b.Minute.UTC().Format(time.RFC3339), err)
	}
	res, err := s.db.sql.ExecContext(ctx, `INSERT INTO bars (asset, minute, open, high, low, close, fence, attempt, written_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (asset, minute) DO UPDATE SET
			open = excluded.open, high = excluded.high, low = excluded.low, close = excluded.close,
			fence = excluded.fence, attempt = excluded.attempt, written_at = excluded.written_at
		WHERE (excluded.fence, excluded.attempt) >= (bars.fence, bars.attempt)`,
		b.Asset, b.Minute.UnixNano(), b.Open, b.High, b.Low, b.Close, b.Fence, b.Attempt, toNanos(b.WrittenAt))
	done()
	if err != nil {
		return fmt.Errorf("put bar %s %s: %w", b.Asset, b.Minute.UTC().Format(time.RFC3339), err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("put bar %s %s: %w", b.Asset, b.Minute.UTC().Format(time.RFC3339), err)
	}
	if n == 0 {
		return fmt.Errorf("put bar %s %s with fence %d attempt %d: %w", b.Asset, b.Minute.UTC().Format(time.RFC3339), b.Fence, b.Attempt, bars.ErrStale)
	}
	return nil
}

// Get returns the bar for (asset, minute) or bars.ErrNotFound.
func (s *BarsStore) Get(ctx context.Context, asset string, minute time.Time) (bars.Bar, error) {
	b := bars.Bar{Asset: asset}
	var m, writtenAt int64
	err := s.db.sql.QueryRowContext(ctx, `SELECT minute, open, high, low, close, fence, attempt, written_at
		FROM bars WHERE asset = ? AND minute = ?`, asset, minute.UnixNano()).
		Scan(&m, &b.Open, &b.High, &b.Low, &b.Close, &b.Fence, &b.Attempt, &writtenAt)
	if errors.Is(err, sql.ErrNoRows) {
		err = bars.ErrNotFound
	}
	if err != nil {
		return bars.Bar{}, fmt.Errorf("get bar %s %s: %w", asset, minute.UTC().Format(time.RFC3339), err)
	}
	b.Minute = time.Unix(0, m).UTC()
	b.WrittenAt = fromNanos(writtenAt)
	return b, nil
}
