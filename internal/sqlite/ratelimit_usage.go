package sqlite

import (
	"context"
	"database/sql"

	"github.com/batonhq/baton/internal/ratelimit"
	"github.com/batonhq/baton/internal/sqlstore"
)

// ReadUsage is ListUsage's read (sqlstore.RateLimitStore): one query. A
// keyed limit's records are the primary key's range ["<name>#",
// "<name>$") ('$' follows '#').
func (d statements) ReadUsage(ctx context.Context, p ratelimit.ListParams, row func(sqlstore.ScanFunc) error) error {
	cond, args := "name = :name", []any{sql.Named("name", p.Limit.Name)}
	if p.Keyed {
		cond = "name >= :lo AND name < :hi"
		args = []any{sql.Named("lo", p.Limit.Name+"#"), sql.Named("hi", p.Limit.Name+"$")}
	}
	q := `SELECT name, SUM(count), '', 0 FROM rate_limits WHERE ` + cond + ` AND win = :at GROUP BY name ORDER BY name`
	if p.Limit.InFlight > 0 {
		q = `SELECT name, slot, holder, until FROM rate_slots WHERE ` + cond + ` AND holder <> '' AND until > :at ORDER BY name, slot`
	}
	rows, err := d.db.sql.QueryContext(ctx, q, append(args, sql.Named("at", sqlstore.UsageAt(p)))...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}
