package baton

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/ratelimit"
)

// RateLimit is a named limit of Starts starts per Per, or of InFlight
// items in flight at once, shared by every
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
// An in-flight limit (InFlight > 0, Starts, Per and Shards zero) has
// InFlight slots, each a record of the store: Task.Wait, or PerItem,
// takes one for the item (a second Wait of the same limit by the same
// item takes nothing more), which holds it until the item's processing
// ends, however it ends. A slot is held until the item's lease ends and
// renewed with each heartbeat, so a consumer that crashed gives its slots
// back when its items' leases run out. A waiting item tries the slots
// again about every 200 ms.
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
	// InFlight, instead of Starts and Per, limits the items holding the
	// limit at once.
	InFlight int
	// PerItem makes the runtime take a start before each item of the
	// job starts (an item waiting for one does not start; past the
	// invocation's deadline it is retried).
	PerItem bool
	// Keyed makes the limit apply per key, the key chosen at run time:
	// Starts per Per (or InFlight at once) for each key, a host, a tenant
	// or a symbol, each key's counters and slots its own records. A
	// processor takes a start for a key with Task.WaitKey; a PerItem
	// keyed limit takes the item's key from Key. Keys need no
	// declaration: a key's records are made at its first start and
	// removed once idle (see docs/flow-control.md).
	Keyed bool
	// Key, for a PerItem keyed limit, is each item's key: a function of
	// its task (Task.Asset, Task.Payload). An empty or over-long key
	// fails the item's start with the reason.
	Key func(Task) string
}

// MaxLimitKey is the longest key of a keyed limit, in bytes.
const MaxLimitKey = 256

// Errors of Task.Wait and Task.WaitKey, matched with errors.Is; the error
// names the limit and the key.
var (
	// ErrUnknownLimit: the task's job declares no limit of that name.
	ErrUnknownLimit = errors.New("unknown rate limit")
	// ErrLimitKey: an empty key, a key over MaxLimitKey bytes, a key
	// given to a limit that is not Keyed, or none given to one that is.
	ErrLimitKey = errors.New("bad rate limit key")
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
	// Wait returns once it took one start of the limit called name, or
	// with an error when ctx ends first or name is not a limit of the
	// task's job.
	Wait(ctx context.Context, name string) error
	// WaitKey is Wait for key of a Keyed limit.
	WaitKey(ctx context.Context, name, key string) error
}

// Wait takes one start of the job's rate limit called name (see
// RateLimit), waiting for the limit's next window when the current one is
// full; of an in-flight limit, a slot held until the item ends, waiting
// for one to be free. With no Limiter (a Task built by hand) it returns at once.
func (t Task) Wait(ctx context.Context, name string) error {
	if t.Limiter == nil {
		return nil
	}
	return t.Limiter.Wait(ctx, name)
}

// WaitKey takes one start of the job's Keyed rate limit called name for
// key (see RateLimit.Keyed): the limit holds for each key on its own, so
// one key's load never takes another's starts. Errors match
// ErrUnknownLimit and ErrLimitKey. With no Limiter (a Task built by hand)
// it returns at once.
func (t Task) WaitKey(ctx context.Context, name, key string) error {
	if t.Limiter == nil {
		return nil
	}
	return t.Limiter.WaitKey(ctx, name, key)
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
