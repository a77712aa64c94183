package baton

import (
	"context"
	"fmt"
	"time"
)

// RateLimit is a named limit of Starts starts per Per, shared by every
// consumer of every process and host: each start takes one unit of the
// current window's counter, kept on the ledger's store (the SQLite file,
// the DynamoDB table) with conditional writes, and a full window waits for
// the next. Over whole windows the observed rate is at most the limit.
//
// A job declares the limits its processors use (Job.RateLimits); a
// processor takes a start with Task.Wait(ctx, name) before each call it
// limits, and with PerItem the runtime takes one before each item of the
// job starts. Jobs that declare the same name share it (and must declare
// it alike).
//
// On DynamoDB one counter record per window is one partition key value,
// which serves about 1,000 writes per second: a limit above a few hundred
// starts per second sets Shards (about Starts per second / 250) so that
// its window is split over that many records, each holding its share.
type RateLimit struct {
	Name   string        // as ValidName defines it
	Starts int           // starts per window, at least 1
	Per    time.Duration // the window, at least 1ms
	// Shards splits the window's counter over as many records; 0 means 1.
	Shards int
	// PerItem makes the runtime take a start before each item of the
	// job starts (an item waiting for one does not start; past the
	// invocation's deadline it is retried).
	PerItem bool
}

func (r RateLimit) check() error {
	if err := ValidName("rate limit", r.Name); err != nil {
		return err
	}
	switch {
	case r.Starts < 1:
		return fmt.Errorf("rate limit %s: Starts must be at least 1", r.Name)
	case r.Per < time.Millisecond:
		return fmt.Errorf("rate limit %s: Per must be at least 1ms", r.Name)
	case r.Shards < 0 || r.Shards > r.Starts:
		return fmt.Errorf("rate limit %s: Shards must be within 0..Starts (%d)", r.Name, r.Starts)
	}
	return nil
}

// Limiter takes starts of the catalog's rate limits for a task.
type Limiter interface {
	// Wait returns once it took one start of the limit called name, or
	// with an error when ctx ends first or name is not a limit of the
	// task's job.
	Wait(ctx context.Context, name string) error
}

// Wait takes one start of the job's rate limit called name (see
// RateLimit), waiting for the limit's next window when the current one is
// full. With no Limiter (a Task built by hand) it returns at once.
func (t Task) Wait(ctx context.Context, name string) error {
	if t.Limiter == nil {
		return nil
	}
	return t.Limiter.Wait(ctx, name)
}

// RateLimit returns the job's rate limit called name.
func (j Job) RateLimit(name string) (RateLimit, bool) {
	for _, r := range j.RateLimits {
		if r.Name == name {
			return r, true
		}
	}
	return RateLimit{}, false
}

// checkRateLimits refuses two jobs declaring one limit differently.
func (c *Catalog) checkRateLimits() error {
	seen := map[string]RateLimit{}
	for _, name := range c.names {
		for _, r := range c.jobs[name].RateLimits {
			want := r
			want.PerItem = false
			if prev, ok := seen[r.Name]; ok && prev != want {
				return fmt.Errorf("catalog: rate limit %s is declared differently by two jobs (%+v and %+v)", r.Name, prev, want)
			}
			seen[r.Name] = want
		}
	}
	return nil
}
