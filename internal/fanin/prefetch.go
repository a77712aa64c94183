package fanin

import (
	"context"
	"slices"
	"sync"

	"github.com/batonhq/baton/internal/ledger"
)

// rangesLister returns the ledger.RangesLister behind store (through a
// Finisher), if there is one.
func rangesLister(store ledger.Store) (ledger.RangesLister, bool) {
	if f, ok := store.(*Finisher); ok {
		store = f.Store
	}
	rl, ok := store.(ledger.RangesLister)
	return rl, ok
}

// prefetched is a store whose next ListItemRange of each prefetched
// range is answered from a read made beforehand.
type prefetched struct {
	ledger.Store
	mu  sync.Mutex
	got map[ledger.ItemRange][]ledger.Item
}

func (p *prefetched) ListItemRange(ctx context.Context, id ledger.RunID, first, last string) ([]ledger.Item, error) {
	r := ledger.ItemRange{First: first, Last: last}
	p.mu.Lock()
	items, ok := p.got[r]
	delete(p.got, r)
	p.mu.Unlock()
	if ok {
		return items, nil
	}
	return p.Store.ListItemRange(ctx, id, first, last)
}

// prefetch reads, on a store that reads several ranges in one round trip
// (ledger.RangesLister), what settleShard is about to read of shards, in
// two round trips whatever their number: their probes, then the whole of
// those whose probe found every item ended (or that have none). It
// returns the store settleShard reads them from; on a store without the
// ability, or with one shard, store itself. A read made here comes after
// the batch's own writes, as settleShard's would (the last item's
// consumer still sees its shard complete); an error leaves the reads to
// settleShard.
func (l layout) prefetch(ctx context.Context, store ledger.Store, run ledger.Run, shards []int, probe shardProbe) ledger.Store {
	rl, ok := rangesLister(store)
	if !ok || len(shards) < 2 || l.pages {
		return store
	}
	p := &prefetched{Store: store, got: map[ledger.ItemRange][]ledger.Item{}}
	type probed struct {
		names []string
		at    int // the probe's offset; -1: none
	}
	var ps []probed
	var probes []ledger.ItemRange
	for _, s := range shards {
		names := l.shard(s)
		if len(names) == 0 {
			continue
		}
		pr := probed{names: names, at: -1}
		// As settleShard decides whether to probe.
		if probe.ended != nil && len(names) > ProbeItems && !slices.Contains(probe.ended, names[len(names)-1]) {
			pr.at = probeWindow(windowKey{run.ID.String(), s}, len(names))
			probes = append(probes, ledger.ItemRange{First: names[pr.at], Last: names[pr.at+ProbeItems-1]})
		}
		ps = append(ps, pr)
	}
	var probeItems [][]ledger.Item
	if len(probes) > 0 {
		var err error
		if probeItems, err = rl.ListItemRanges(ctx, run.ID, probes); err != nil {
			return store
		}
	}
	var whole []ledger.ItemRange
	k := 0
	for _, pr := range ps {
		if pr.at >= 0 {
			items := probeItems[k]
			r := probes[k]
			k++
			p.got[r] = items
			if _, done := shardCounts(pr.names[pr.at:pr.at+ProbeItems], items); !done {
				continue // in flight: settleShard stops at the probe
			}
		}
		whole = append(whole, ledger.ItemRange{First: pr.names[0], Last: pr.names[len(pr.names)-1]})
	}
	if len(whole) > 0 {
		items, err := rl.ListItemRanges(ctx, run.ID, whole)
		if err != nil {
			return p // the probes stand; settleShard lists the shards
		}
		for i, r := range whole {
			p.got[r] = items[i]
		}
	}
	return p
}
