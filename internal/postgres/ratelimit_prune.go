package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/ratelimit"
)

var _ ratelimit.Pruner = (*RateLimitStore)(nil)

// PruneLimits implements ratelimit.Pruner: the counters whose window
// ended before now, and the slots free or run out for ratelimit.SlotIdle,
// in one statement (retried through a lost connection: a re-run deletes
// what is left).
func (s *RateLimitStore) PruneLimits(ctx context.Context, now time.Time) (int, error) {
	var counters, slots int
	err := s.db.queryRow(ctx, nil, `
WITH c AS (DELETE FROM baton_rate_limits WHERE expires < $1 RETURNING 1),
     s AS (DELETE FROM baton_rate_slots WHERE until < $2 RETURNING 1)
SELECT (SELECT count(*) FROM c), (SELECT count(*) FROM s)`, toNanos(now), toNanos(now.Add(-ratelimit.SlotIdle))).Scan(&counters, &slots)
	if err != nil {
		return 0, fmt.Errorf("prune rate limits: %w", translate(err))
	}
	return counters + slots, nil
}
