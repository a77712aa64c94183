package sqlite

import (
	"context"
	"database/sql"
)

// DeleteRunOut is PruneLimits' write (sqlstore.RateLimitStore): the
// counters and the slots in one write transaction.
func (d statements) DeleteRunOut(ctx context.Context, expired, idle int64) (int, error) {
	var n int64
	err := d.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, q := range []struct {
			sql   string
			bound int64
		}{{`DELETE FROM rate_limits WHERE expires < ?`, expired}, {`DELETE FROM rate_slots WHERE until < ?`, idle}} {
			res, err := tx.ExecContext(ctx, q.sql, q.bound)
			if err != nil {
				return err
			}
			deleted, err := res.RowsAffected()
			if err != nil {
				return err
			}
			n += deleted
		}
		return nil
	})
	return int(n), err
}
