package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/ratelimit"
)

// RateLimitStore is the ratelimit.Store on PostgreSQL: one row per
// counter.
type RateLimitStore struct{ db *DB }

var _ ratelimit.Store = (*RateLimitStore)(nil)

// NewRateLimitStore returns the rate limit store on db.
func NewRateLimitStore(db *DB) *RateLimitStore { return &RateLimitStore{db: db} }

// Take implements ratelimit.Store: one upsert whose update is conditioned
// on the count (INSERT … ON CONFLICT DO UPDATE … WHERE count < max); when
// it writes nothing, a read of the count. The first take of a window also
// removes the name's windows before the previous one.
func (s *RateLimitStore) Take(ctx context.Context, p ratelimit.TakeParams) (int, error) {
	subject := fmt.Sprintf("rate limit %s window %d shard %d", p.Name, p.Window, p.Shard)
	if p.Max < 1 || p.Window < 0 || p.Shard < 0 || p.Name == "" {
		return 0, fmt.Errorf("%s: name, max ≥ 1, window and shard ≥ 0 required", subject)
	}
	var n int
	err := s.db.pool.QueryRow(ctx, `INSERT INTO baton_rate_limits (name, win, shard, count, expires) VALUES ($1, $2, $3, 1, $4)
		ON CONFLICT (name, win, shard) DO UPDATE SET count = baton_rate_limits.count + 1 WHERE baton_rate_limits.count < $5
		RETURNING count`, p.Name, p.Window, p.Shard, toNanos(p.Expires), p.Max).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		if err := s.db.pool.QueryRow(ctx, `SELECT count FROM baton_rate_limits WHERE name = $1 AND win = $2 AND shard = $3`,
			p.Name, p.Window, p.Shard).Scan(&n); err != nil {
			return 0, fmt.Errorf("%s: %w", subject, translate(err))
		}
		return n, fmt.Errorf("%s: %w", subject, ratelimit.ErrFull)
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %w", subject, translate(err))
	}
	if n == 1 {
		if _, err := s.db.pool.Exec(ctx, `DELETE FROM baton_rate_limits WHERE name = $1 AND win < $2::bigint - 1`, p.Name, p.Window); err != nil {
			return n, fmt.Errorf("%s: clean up: %w", subject, translate(err))
		}
	}
	return n, nil
}
