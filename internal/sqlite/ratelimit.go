package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/batonhq/baton/internal/ratelimit"
)

// RateLimitStore is the embedded ratelimit.Store: one row per counter.
type RateLimitStore struct{ db *DB }

var _ ratelimit.Store = (*RateLimitStore)(nil)

// NewRateLimitStore returns the rate limit store on db.
func NewRateLimitStore(db *DB) *RateLimitStore { return &RateLimitStore{db: db} }

// Take implements ratelimit.Store: one upsert whose update is conditioned
// on the count, in one write transaction. The first take of a window
// also removes the name's expired counters.
func (s *RateLimitStore) Take(ctx context.Context, p ratelimit.TakeParams) (int, error) {
	if p.Max < 1 || p.Window < 0 || p.Shard < 0 || p.Name == "" {
		return 0, fmt.Errorf("rate limit %q window %d shard %d: name, max ≥ 1, window and shard ≥ 0 required", p.Name, p.Window, p.Shard)
	}
	var n int
	var full bool
	err := s.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		args := []any{sql.Named("name", p.Name), sql.Named("win", p.Window), sql.Named("shard", p.Shard)}
		err := tx.QueryRowContext(ctx, `
			INSERT INTO rate_limits (name, win, shard, count, expires) VALUES (:name, :win, :shard, 1, :expires)
			ON CONFLICT (name, win, shard) DO UPDATE SET count = count + 1 WHERE count < :max
			RETURNING count`, append(args, sql.Named("expires", toNanos(p.Expires)), sql.Named("max", p.Max))...).Scan(&n)
		if errors.Is(err, sql.ErrNoRows) {
			full = true
			return tx.QueryRowContext(ctx, `SELECT count FROM rate_limits WHERE name = :name AND win = :win AND shard = :shard`, args...).Scan(&n)
		}
		if err != nil {
			return err
		}
		if n == 1 {
			_, err = tx.ExecContext(ctx, `DELETE FROM rate_limits WHERE name = :name AND win < :win - 1`, args...)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("rate limit %s window %d shard %d: %w", p.Name, p.Window, p.Shard, err)
	}
	if full {
		return n, fmt.Errorf("rate limit %s window %d shard %d: %w", p.Name, p.Window, p.Shard, ratelimit.ErrFull)
	}
	return n, nil
}
