package postgres

import (
	"context"

	"github.com/batonhq/baton/internal/ratelimit"
	"github.com/batonhq/baton/internal/sqlstore"
)

// ReadUsage is ListUsage's read (sqlstore.RateLimitStore): one query.
// A keyed limit's records are the names starting with "<name>#"
// (starts_with compares bytes, whatever the collation).
func (d statements) ReadUsage(ctx context.Context, p ratelimit.ListParams, row func(sqlstore.ScanFunc) error) error {
	cond, arg := "name = $1", p.Limit.Name
	if p.Keyed {
		cond, arg = "starts_with(name, $1)", p.Limit.Name+"#"
	}
	q := `SELECT name, SUM(count)::bigint, '', 0::bigint FROM baton_rate_limits WHERE ` + cond + ` AND win = $2 GROUP BY name ORDER BY name`
	if p.Limit.InFlight > 0 {
		q = `SELECT name, slot::bigint, holder, until FROM baton_rate_slots WHERE ` + cond + ` AND holder <> '' AND until > $2 ORDER BY name, slot`
	}
	rows, err := d.db.pool.Query(ctx, q, arg, sqlstore.UsageAt(p))
	if err != nil {
		return translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return translate(err)
		}
	}
	return translate(rows.Err())
}
