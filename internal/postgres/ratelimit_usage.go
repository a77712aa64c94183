package postgres

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/internal/ratelimit"
)

var _ ratelimit.Lister = (*RateLimitStore)(nil)

// ListUsage implements ratelimit.Lister: one read of the limit's rows
// (its own name, or its keys' names: those starting with name#),
// grouped by record name.
func (s *RateLimitStore) ListUsage(ctx context.Context, p ratelimit.ListParams) ([]ratelimit.Usage, error) {
	cond, arg := "name = $1", p.Limit.Name
	if p.Keyed {
		cond, arg = "starts_with(name, $1)", p.Limit.Name+"#"
	}
	var q string
	var at int64
	if p.Limit.InFlight > 0 {
		q = `SELECT name, slot, holder, until FROM baton_rate_slots WHERE ` + cond + ` AND holder <> '' AND until > $2 ORDER BY name, slot`
		at = toNanos(p.Now)
	} else {
		q = `SELECT name, SUM(count)::bigint, '', 0::bigint FROM baton_rate_limits WHERE ` + cond + ` AND win = $2 GROUP BY name ORDER BY name`
		at = p.Limit.Window(p.Now)
	}
	rows, err := s.db.pool.Query(ctx, q, arg, at)
	if err != nil {
		return nil, fmt.Errorf("rate limit %s: list usage: %w", p.Limit.Name, translate(err))
	}
	defer rows.Close()
	g := ratelimit.NewUsages(p)
	for rows.Next() {
		var (
			name, holder string
			n, until     int64
		)
		if err := rows.Scan(&name, &n, &holder, &until); err != nil {
			return nil, fmt.Errorf("rate limit %s: list usage: %w", p.Limit.Name, translate(err))
		}
		if p.Limit.InFlight > 0 {
			g.AddHold(name, ratelimit.Hold{Slot: int(n), Holder: holder, Until: fromNanos(until)})
		} else {
			g.AddStarts(name, int(n))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("rate limit %s: list usage: %w", p.Limit.Name, translate(err))
	}
	return g.List(), nil
}
