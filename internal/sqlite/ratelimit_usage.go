package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/batonhq/baton/internal/ratelimit"
)

var _ ratelimit.Lister = (*RateLimitStore)(nil)

// ListUsage implements ratelimit.Lister: one read of the limit's rows
// (its own name, or the range of its keys' names: name#… sorts between
// name# and name$), grouped by record name.
func (s *RateLimitStore) ListUsage(ctx context.Context, p ratelimit.ListParams) ([]ratelimit.Usage, error) {
	cond, args := "name = :name", []any{sql.Named("name", p.Limit.Name)}
	if p.Keyed {
		cond = "name >= :lo AND name < :hi"
		args = []any{sql.Named("lo", p.Limit.Name+"#"), sql.Named("hi", p.Limit.Name+"$")}
	}
	var q string
	if p.Limit.InFlight > 0 {
		q = `SELECT name, slot, holder, until FROM rate_slots WHERE ` + cond + ` AND holder <> '' AND until > :now ORDER BY name, slot`
		args = append(args, sql.Named("now", toNanos(p.Now)))
	} else {
		q = `SELECT name, SUM(count), 0, 0 FROM rate_limits WHERE ` + cond + ` AND win = :win GROUP BY name ORDER BY name`
		args = append(args, sql.Named("win", p.Limit.Window(p.Now)))
	}
	rows, err := s.db.sql.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("rate limit %s: list usage: %w", p.Limit.Name, err)
	}
	defer rows.Close()
	g := ratelimit.NewUsages(p)
	for rows.Next() {
		var (
			name, holder string
			n            int
			until        int64
		)
		if p.Limit.InFlight > 0 {
			err = rows.Scan(&name, &n, &holder, &until)
		} else {
			err = rows.Scan(&name, &n, new(int), new(int64))
		}
		if err != nil {
			return nil, fmt.Errorf("rate limit %s: list usage: %w", p.Limit.Name, err)
		}
		if p.Limit.InFlight > 0 {
			g.AddHold(name, ratelimit.Hold{Slot: n, Holder: holder, Until: fromNanos(until)})
		} else {
			g.AddStarts(name, n)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("rate limit %s: list usage: %w", p.Limit.Name, err)
	}
	return g.List(), nil
}
