package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/ratelimit"
)

var _ ratelimit.Pruner = (*RateLimitStore)(nil)

// PruneLimits implements ratelimit.Pruner: the counters whose window
// ended before now, and the slots free or run out for ratelimit.SlotIdle,
// in one write transaction.
func (s *RateLimitStore) PruneLimits(ctx context.Context, now time.Time) (int, error) {
	var n int64
	err := s.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM rate_limits WHERE expires < ?`, toNanos(now))
		if err != nil {
			return err
		}
		counters, err := res.RowsAffected()
		if err != nil {
			return err
		}
		res, err = tx.ExecContext(ctx, `DELETE FROM rate_slots WHERE until < ?`, toNanos(now.Add(-ratelimit.SlotIdle)))
		if err != nil {
			return err
		}
		slots, err := res.RowsAffected()
		n = counters + slots
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune rate limits: %w", err)
	}
	return int(n), nil
}
