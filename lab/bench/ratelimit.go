package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/ratelimit"
	"github.com/batonhq/baton/internal/ratelimit/ratelimittest"
)

// RateLimit measures a shared limit of 50 starts per second taken by 2
// groups ("processes", each its own store handle) of 8 callers for span
// on tg: the observed rate, read against the limit, with the goal of the
// issue (at most 52.5/s and at least 45/s). On the DynamoDB server the
// limit is split over 2 shards (its counters take about 75 conditional
// writes a second per key on the emulator).
func RateLimit(ctx context.Context, tg Target, span time.Duration) ([]Row, error) {
	env, err := tg.OpenFunc(ctx, "ratelimit")
	if err != nil {
		return nil, err
	}
	defer env.Close()
	store := env.Plain.RateLimits
	if store == nil {
		return nil, fmt.Errorf("%s: no rate limit store", tg.Name)
	}
	shards := 1
	if env.Plain.Name == "aws" {
		shards = 2
	}
	l := ratelimit.Limit{Name: fmt.Sprintf("bench-%d", time.Now().UnixNano()), Starts: 50, Per: time.Second, Shards: shards}
	m, err := ratelimittest.Measure(ctx, []ratelimit.Store{store, store}, 8, l, span)
	goal := &Goal{Text: "45–52.5 /s", MetFunc: func(r Row) bool { return r.Value >= 45 && r.Value <= 52.5 }}
	row := Row{Scenario: "7 rate limit", Backend: tg.Name, Figure: fmt.Sprintf("starts/s of a 50/s limit, 2×8 callers, %s (%d shard(s))", span, shards),
		Value: m.Rate, Reference: m.Limit, RefText: "the limit", Unit: Count, Goal: goal,
		Note: fmt.Sprintf("%d starts, %d takes", m.Starts, m.Attempts)}
	if err != nil {
		row.Note = "failed: " + err.Error()
	}
	return []Row{row}, err
}
