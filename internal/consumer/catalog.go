package consumer

import (
	"sync"
	"sync/atomic"

	"github.com/batonhq/baton/internal/job"
)

// hasItem reports whether name is an asset or a derived item of d, as
// d.HasItem, without scanning a large catalog for every message: the
// names of a job with more than scanLimit of them are put in a set once,
// and the set is kept for as long as d's slices are the same (job
// definitions are not changed once handed to a consumer).
func hasItem(d job.Definition, name string) bool {
	if len(d.Assets)+len(d.Derived) <= scanLimit {
		return d.HasItem(name)
	}
	k := catalogKey{nAssets: len(d.Assets), nDerived: len(d.Derived)}
	k.assets = &d.Assets[0]
	if len(d.Derived) > 0 {
		k.derived = &d.Derived[0]
	}
	if set, ok := itemSets.Load(k); ok {
		_, found := set.(map[string]struct{})[name]
		return found
	}
	set := make(map[string]struct{}, len(d.Assets)+len(d.Derived))
	for _, a := range d.Assets {
		set[a] = struct{}{}
	}
	for _, x := range d.Derived {
		set[x.Name] = struct{}{}
	}
	if itemSetCount.Add(1) > maxItemSets { // definitions made on the fly: start over
		itemSets.Clear()
		itemSetCount.Store(1)
	}
	itemSets.Store(k, set)
	_, found := set[name]
	return found
}

// scanLimit is the catalog size up to which a scan is as fast as a set.
const scanLimit = 32

// maxItemSets bounds the sets kept.
const maxItemSets = 256

// catalogKey identifies a definition's catalog by its slices.
type catalogKey struct {
	nAssets, nDerived int
	assets            *string
	derived           *job.Derived
}

var (
	itemSets     sync.Map // catalogKey → map[string]struct{}
	itemSetCount atomic.Int64
)
