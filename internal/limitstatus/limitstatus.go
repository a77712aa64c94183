// Package limitstatus is what baton status and the dashboard show of a
// job's rate limits now: for each declared limit its hottest keys (the
// starts taken in the current window of a rate limit, the slots of an
// in-flight limit and the items holding them), and the items waiting on
// it (handed back by a busy key, with their next attempt). It reads the
// limit store (ratelimit.Lister) and the item records the caller read;
// it writes nothing.
//
// The view is bounded: Top keys per limit, the most loaded first, and a
// count of the others. A key is data, of up to baton.MaxLimitKey bytes:
// it is shown whole in the JSON form and cut to ShownKey bytes in text
// (Cut).
package limitstatus

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/ratelimit"
)

// Top is how many keys of a limit are shown.
const Top = 10

// ShownKey is how many bytes of a key text shows.
const ShownKey = 64

// Limit is one declared limit's status now.
type Limit struct {
	Name     string     `json:"name"`
	Keyed    bool       `json:"keyed"`
	PerItem  bool       `json:"per_item"`
	Starts   int        `json:"starts,omitempty"`       // a rate limit: starts per window (per key when keyed)
	Per      string     `json:"per,omitempty"`          // its window
	InFlight int        `json:"in_flight,omitempty"`    // an in-flight limit: holders at once (per key when keyed)
	Window   *time.Time `json:"window_start,omitempty"` // a rate limit: the start of the current window
	// Keys are the hottest keys now, the most loaded first (starts or
	// slots held, then waiters), at most Top; an unkeyed limit has at
	// most one, Key "".
	Keys []Key `json:"keys"`
	// OtherKeys counts the keys in use or waited on beyond Keys.
	OtherKeys int `json:"other_keys"`
	// Waiting counts the items waiting on the limit, every key included
	// (among the runs read).
	Waiting int `json:"waiting"`
	// Error says why the usage is not known (a store without
	// ratelimit.Lister, a failed read); the waiters still are.
	Error string `json:"error,omitempty"`
}

// Key is one key of a limit now.
type Key struct {
	Key     string   `json:"key"`
	Starts  int      `json:"starts,omitempty"`  // taken in the current window
	Holders []Holder `json:"holders,omitempty"` // slots held past now
	Waiters []Waiter `json:"waiters,omitempty"` // items handed back waiting on it
}

// Holder is a live slot of an in-flight limit.
type Holder struct {
	Slot int `json:"slot"`
	// Item is the item key holding the slot, "" when the holder is not a
	// consumer's item (Holder says who).
	Item   string    `json:"item,omitempty"`
	Owner  string    `json:"owner,omitempty"`
	Holder string    `json:"holder"`
	Until  time.Time `json:"until"`
}

// Waiter is an item handed back by a busy key.
type Waiter struct {
	Item        string    `json:"item"`
	NextAttempt time.Time `json:"next_attempt"`
}

func (k Key) load() int { return k.Starts + len(k.Holders) }

// Params are the inputs of Read.
type Params struct {
	Job   baton.Job
	Store ratelimit.Store // nil: no store (usage unknown)
	Items []ledger.Item   // item records read (waiters are found among them)
	Now   time.Time
	Top   int // 0: Top
}

// ErrNoLister: the store cannot list its records (Limit.Error).
var ErrNoLister = errors.New("this store cannot list its limits' usage")

// Read returns the status of every limit p.Job declares, in declaration
// order. A failed read of one limit's usage is said in its Error; the
// others are read still.
func Read(ctx context.Context, p Params) []Limit {
	top := cmp.Or(p.Top, Top)
	waiters := map[string]map[string][]Waiter{} // limit → key → waiters
	for _, it := range p.Items {
		w, ok := it.NextAttempt()
		if !ok || w.Limit == "" {
			continue
		}
		if waiters[w.Limit] == nil {
			waiters[w.Limit] = map[string][]Waiter{}
		}
		waiters[w.Limit][w.Key] = append(waiters[w.Limit][w.Key], Waiter{Item: it.Key.String(), NextAttempt: w.At.UTC()})
	}
	out := make([]Limit, 0, len(p.Job.RateLimits))
	for _, r := range p.Job.RateLimits {
		l := Limit{Name: r.Name, Keyed: r.Keyed, PerItem: r.PerItem, Starts: r.Starts, InFlight: r.InFlight, Keys: []Key{}}
		lim := ratelimit.Limit{Name: r.Name, Starts: r.Starts, Per: r.Per, Shards: r.Shards, InFlight: r.InFlight}
		if r.InFlight == 0 {
			l.Per = r.Per.String()
			start := time.Unix(0, lim.Window(p.Now)*int64(r.Per)).UTC()
			l.Window = &start
		}
		byKey := map[string]*Key{}
		at := func(key string) *Key {
			k := byKey[key]
			if k == nil {
				k = &Key{Key: key}
				byKey[key] = k
			}
			return k
		}
		lister, ok := p.Store.(ratelimit.Lister)
		switch {
		case p.Store == nil || !ok:
			l.Error = ErrNoLister.Error()
		default:
			us, err := lister.ListUsage(ctx, ratelimit.ListParams{Limit: lim, Keyed: r.Keyed, Now: p.Now})
			if err != nil {
				l.Error = err.Error()
			}
			for _, u := range us {
				k := at(u.Key)
				k.Starts = u.Starts
				for _, h := range u.Holds {
					k.Holders = append(k.Holders, holder(h))
				}
			}
		}
		for key, ws := range waiters[r.Name] {
			slices.SortFunc(ws, func(a, b Waiter) int { return a.NextAttempt.Compare(b.NextAttempt) })
			at(key).Waiters = ws
			l.Waiting += len(ws)
		}
		keys := make([]Key, 0, len(byKey))
		for _, k := range byKey {
			keys = append(keys, *k)
		}
		slices.SortFunc(keys, func(a, b Key) int {
			if c := cmp.Compare(b.load(), a.load()); c != 0 {
				return c
			}
			if c := cmp.Compare(len(b.Waiters), len(a.Waiters)); c != 0 {
				return c
			}
			return cmp.Compare(a.Key, b.Key)
		})
		if len(keys) > top {
			l.OtherKeys = len(keys) - top
			keys = keys[:top]
		}
		l.Keys = keys
		out = append(out, l)
	}
	return out
}

func holder(h ratelimit.Hold) Holder {
	out := Holder{Slot: h.Slot, Holder: h.Holder, Until: h.Until.UTC()}
	if k, owner, ok := consumer.HolderItem(h.Holder); ok {
		out.Item, out.Owner = k.String(), owner
	}
	return out
}

// Cut is key as text shows it: quoted, cut to ShownKey bytes (with "…").
func Cut(key string) string {
	if len(key) > ShownKey {
		return strconv.Quote(key[:ShownKey]) + "…"
	}
	return strconv.Quote(key)
}
