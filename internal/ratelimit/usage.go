package ratelimit

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// Usage is what one key of a limit holds at a time: the starts taken in
// the window of that time (a rate limit), or the live slots and their
// holders (an in-flight limit).
type Usage struct {
	// Key is the key (as given to KeyedName); "" for an unkeyed limit.
	Key string
	// Starts is the count of starts taken in the window of ListParams.Now,
	// summed over its shards (a rate limit).
	Starts int
	// Holds are the slots live at ListParams.Now, by slot (an in-flight
	// limit).
	Holds []Hold
}

// Hold is a live slot of an in-flight limit.
type Hold struct {
	Slot   int
	Holder string    // SlotParams.Holder of the hold
	Until  time.Time // when it ends unless renewed
}

// Load is u's weight for Hottest: its starts, or its live slots.
func (u Usage) Load() int { return u.Starts + len(u.Holds) }

// ListParams are the inputs of Lister.ListUsage.
type ListParams struct {
	// Limit is the limit as declared (Name is the limit's name, never a
	// key's record name); Per says which window is the current one (a
	// rate limit), InFlight how many slots it has.
	Limit Limit
	// Keyed lists every key's records (KeyedName(Limit.Name, key)), not
	// the limit's own.
	Keyed bool
	Now   time.Time
}

// Lister is an optional ability of a Store: reading what a limit's
// records hold now, for operators (baton status, the dashboard). Every
// adapter of baton implements it; a store without it shows no usage.
type Lister interface {
	// ListUsage returns one Usage per key of p.Limit that has any at
	// p.Now: a start in the window of Now (a rate limit: the counters of
	// window Now/Per) or a slot held past Now (an in-flight limit), in no
	// particular order; for an unkeyed limit at most one, Key "". A key
	// with no start in the window and no live slot is not returned. It
	// writes nothing, and never reads the whole store (a scan of other
	// records): its cost grows with the limit's live keys.
	ListUsage(ctx context.Context, p ListParams) ([]Usage, error)
}

// Window is the index of the window of l (a rate limit) that holds now,
// as Limiter.TryTake counts it.
func (l Limit) Window(now time.Time) int64 {
	if l.Per <= 0 {
		return 0
	}
	return now.UnixNano() / int64(l.Per)
}

// Hottest returns at most top of us, the most loaded first (Load; ties
// by key), and how many were left out. us is not changed.
func Hottest(us []Usage, top int) (hot []Usage, rest int) {
	hot = slices.Clone(us)
	slices.SortFunc(hot, func(a, b Usage) int {
		if c := cmp.Compare(b.Load(), a.Load()); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	if top >= 0 && len(hot) > top {
		return hot[:top], len(hot) - top
	}
	return hot, 0
}

// Usages gathers the records an adapter read for Lister.ListUsage into
// one Usage per key. The zero value is not usable: NewUsages.
type Usages struct {
	p   ListParams
	out []Usage
	idx map[string]int
}

// NewUsages returns an empty gathering for p.
func NewUsages(p ListParams) *Usages { return &Usages{p: p, idx: map[string]int{}} }

// at returns the Usage of record, false when record is not one of p's
// (another limit's, or a key's when p is unkeyed).
func (g *Usages) at(record string) (*Usage, bool) {
	key := ""
	if g.p.Keyed {
		name, k, ok := KeyOf(record)
		if !ok || name != g.p.Limit.Name {
			return nil, false
		}
		key = k
	} else if record != g.p.Limit.Name {
		return nil, false
	}
	i, ok := g.idx[key]
	if !ok {
		i = len(g.out)
		g.idx[key] = i
		g.out = append(g.out, Usage{Key: key})
	}
	return &g.out[i], true
}

// AddStarts adds n starts of the current window to record's key.
func (g *Usages) AddStarts(record string, n int) {
	if u, ok := g.at(record); ok && n > 0 {
		u.Starts += n
	}
}

// AddHold adds a live slot to record's key.
func (g *Usages) AddHold(record string, h Hold) {
	if u, ok := g.at(record); ok {
		u.Holds = append(u.Holds, h)
	}
}

// List returns the gathered usage, keys with none left out, each key's
// holds by slot.
func (g *Usages) List() []Usage {
	out := make([]Usage, 0, len(g.out))
	for _, u := range g.out {
		if u.Load() == 0 {
			continue
		}
		slices.SortFunc(u.Holds, func(a, b Hold) int { return cmp.Compare(a.Slot, b.Slot) })
		out = append(out, u)
	}
	return out
}
