package postgres

import (
	"context"
)

// DeleteRunOut is PruneLimits' write (sqlstore.RateLimitStore): the
// counters and the slots in one statement (retried through a lost
// connection: a re-run deletes what is left).
func (d statements) DeleteRunOut(ctx context.Context, expired, idle int64) (int, error) {
	var counters, slots int
	err := d.db.queryRow(ctx, nil, `
WITH c AS (DELETE FROM baton_rate_limits WHERE expires < $1 RETURNING 1),
     s AS (DELETE FROM baton_rate_slots WHERE until < $2 RETURNING 1)
SELECT (SELECT count(*) FROM c), (SELECT count(*) FROM s)`, expired, idle).Scan(&counters, &slots)
	return counters + slots, translate(err)
}
