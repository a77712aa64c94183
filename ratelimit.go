package baton

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/ratelimit"
)

// RateLimit is a limit shared by every consumer, taken with Task.Wait.
type RateLimit struct {
	Name     string            // see ValidName; jobs declaring one name share the limit
	Starts   int               // starts per window, at least 1
	Per      time.Duration     // the window, at least 1ms
	Shards   int               // the window's counter split over as many records (DynamoDB); 0 means 1
	InFlight int               // instead of Starts and Per: items holding the limit at once
	PerItem  bool              // the runtime takes a start before each item of the job starts
	Keyed    bool              // the limit holds for each key on its own, the key chosen at run time
	Key      func(Task) string // for a PerItem Keyed limit: each item's key
}

// MaxLimitKey is the longest key of a keyed limit, in bytes.
const MaxLimitKey = 256

// Errors of Task.Wait and Task.WaitKey.
var (
	ErrUnknownLimit = errors.New("unknown rate limit") // the job declares no limit of that name
	ErrLimitKey     = errors.New("bad rate limit key") // empty, too long, or not matching Keyed
)

func (r RateLimit) check() error {
	if err := ValidName("rate limit", r.Name); err != nil {
		return err
	}
	switch {
	case r.Key != nil && !(r.Keyed && r.PerItem):
		return fmt.Errorf("rate limit %s: Key is the item's key of a Keyed PerItem limit; set both", r.Name)
	case r.Keyed && r.PerItem && r.Key == nil:
		return fmt.Errorf("rate limit %s: a Keyed PerItem limit needs Key, the function that gives each item's key", r.Name)
	}
	return ratelimit.Limit{Name: r.Name, Starts: r.Starts, Per: r.Per, Shards: r.Shards, InFlight: r.InFlight}.Check()
}

// Limiter takes starts of the catalog's rate limits for a task.
type Limiter interface {
	Wait(ctx context.Context, name string) error         // returns once it took a start of the limit
	WaitKey(ctx context.Context, name, key string) error // Wait for key of a Keyed limit
}

// Wait takes a start of the job's rate limit called name, waiting for it.
func (t Task) Wait(ctx context.Context, name string) error {
	if t.Limiter == nil {
		return nil
	}
	return t.Limiter.Wait(ctx, name)
}

// WaitKey takes a start of the job's Keyed rate limit called name for key.
func (t Task) WaitKey(ctx context.Context, name, key string) error {
	if t.Limiter == nil {
		return nil
	}
	return t.Limiter.WaitKey(ctx, name, key)
}

// checkRateLimits refuses two jobs declaring one limit differently.
func (c *Catalog) checkRateLimits() error {
	type decl struct {
		starts, shards, inFlight int
		per                      time.Duration
		keyed                    bool
	}
	seen := map[string]decl{}
	for _, name := range c.names {
		for _, r := range c.jobs[name].RateLimits {
			want := decl{starts: r.Starts, shards: r.Shards, inFlight: r.InFlight, per: r.Per, keyed: r.Keyed}
			if prev, ok := seen[r.Name]; ok && prev != want {
				return fmt.Errorf("catalog: rate limit %s is declared differently by two jobs (%+v and %+v)", r.Name, prev, want)
			}
			seen[r.Name] = want
		}
	}
	return nil
}
