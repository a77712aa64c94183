package awsdynamodb

import (
	"context"
	"fmt"
	"strconv"

	"github.com/batonhq/baton/internal/ratelimit"
)

// Rate limit counter attributes (pk LIMIT#<name>#<window>#<shard>, sk
// LIMIT).
const (
	prefixLimit = "LIMIT#"
	skLimit     = "LIMIT"
	limitCount  = "count"
)

// limitKey is counter (name, window, shard): a partition of its own, so
// that the shards of a window spread a limit's writes over as many
// partition key values (see package ratelimit's "Hot keys").
func limitKey(name string, window int64, shard int) key {
	return key{prefixLimit + name + "#" + strconv.FormatInt(window, 10) + "#" + strconv.Itoa(shard), skLimit}
}

// RateLimitStore is the ratelimit.Store on a table.
type RateLimitStore struct{ t table }

var _ ratelimit.Store = (*RateLimitStore)(nil)

// NewRateLimitStore returns the rate limit store on table.
func NewRateLimitStore(client API, table string, o *Options) *RateLimitStore {
	return &RateLimitStore{t: newTable(client, table, o)}
}

// Take implements ratelimit.Store with one UpdateItem conditioned on the
// count; the record's TTL is p.Expires.
func (s *RateLimitStore) Take(ctx context.Context, p ratelimit.TakeParams) (int, error) {
	op := fmt.Sprintf("rate limit %s window %d shard %d", p.Name, p.Window, p.Shard)
	if p.Max < 1 || p.Window < 0 || p.Shard < 0 || p.Name == "" {
		return 0, fmt.Errorf("%s: name, max ≥ 1, window and shard ≥ 0 required", op)
	}
	u := update{
		set:    []string{"#" + attrTTL + " = :ttl"},
		add:    []string{"#" + limitCount + " :one"},
		cond:   "attribute_not_exists(#" + limitCount + ") OR #" + limitCount + " < :max",
		values: record{":one": num(1), ":max": num(int64(p.Max)), ":ttl": num(p.Expires.Unix())},
	}
	w, err := s.t.update(ctx, op, limitKey(p.Name, p.Window, p.Shard), u)
	if err != nil {
		return 0, err
	}
	d := decoder{rec: w.rec}
	n := 0
	if w.rec != nil {
		n = d.int(limitCount)
		if d.err != nil {
			return 0, fmt.Errorf("%s: %w", op, d.err)
		}
	}
	if !w.applied {
		return n, fmt.Errorf("%s: %w", op, ratelimit.ErrFull)
	}
	return n, nil
}
