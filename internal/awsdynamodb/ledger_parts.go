package awsdynamodb

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/batonhq/baton/internal/ledger"
)

// Item partitions. DynamoDB serves one partition key value at about 1,000
// write units per second, so a run whose items all shared ITEMS#<run id>
// could not go faster than 500 items per second (a claim and a completion
// each) however many consumers ran. A generation opened with more than
// Options.ShardsPerPartition shards spreads its items over
// ceil(shards/ShardsPerPartition) partition keys, ITEMS#<run id>#P<p>
// with p = ledger.ItemPartition(asset, parts): about 1,024 items each by
// default, whatever the run's size (invariant 12). Smaller runs keep the
// single partition ITEMS#<run id>, which is also where every item of a
// run opened by an earlier version lives: one Query lists them.
//
// The count is stored with the run (runParts), and an item's partition is
// a function of its name and the count, so a store finds any item's
// record from its key once it knows the count of its generation: it reads
// the run record once per generation and keeps the count (it never
// changes for a generation) in a small cache, which OpenRun, GetRun and
// ListRuns fill as they read run records.

// Run record attributes of the item partitions.
const (
	// runParts is the item partition count of the current generation,
	// valid only when runPartsTok equals runOpenToken: a record of an
	// earlier version resumed by this one gets both from the resuming
	// write, whose token is not the opening one, and reads as one
	// partition (its items were written there already).
	runParts    = "parts"
	runPartsTok = "parts_tok"
	// runPartsOf is the prefix of parts_<gen>: the count of a superseded
	// generation, written by the forced write that supersedes it.
	runPartsOf = "parts_"
)

// DefaultShardsPerPartition is Options.ShardsPerPartition when 0: 16
// shards of 64 items, 1,024 items (2,048 item writes) per partition key.
const DefaultShardsPerPartition = 16

// partitionsFor returns the item partitions of a generation opened with
// shards shards.
func (t table) partitionsFor(shards int) int {
	if shards <= t.shardsPerPart {
		return 1
	}
	return (shards + t.shardsPerPart - 1) / t.shardsPerPart
}

// itemPK returns the partition key of the item called asset in run, of
// parts partitions.
func itemPK(run ledger.RunID, asset string, parts int) string {
	if parts <= 1 {
		return prefixItems + run.String()
	}
	return partPK(run, ledger.ItemPartition(asset, parts))
}

// partPK is the partition key of partition p of a partitioned run.
func partPK(run ledger.RunID, p int) string {
	return prefixItems + run.String() + "#P" + strconv.Itoa(p)
}

// partsCacheMax bounds the cache of partition counts; past it the cache
// is emptied (a consumer serves a few runs at a time).
const partsCacheMax = 4096

// partsCache holds the item partition count of run generations.
type partsCache struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *partsCache) get(run ledger.RunID) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.m[run.String()]
	return n, ok
}

func (c *partsCache) put(run ledger.RunID, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= partsCacheMax {
		c.m = make(map[string]int)
	}
	c.m[run.String()] = n
}

// remember keeps the partition counts a run record holds: its current
// generation's and those of the generations it superseded.
func (s *LedgerStore) remember(rec record, run ledger.Run) {
	s.parts.put(run.ID, max(run.Partitions, 1))
	for g := 1; g < run.ID.Generation; g++ {
		if n, ok := numAttr(rec, runPartsOf+strconv.Itoa(g)); ok {
			s.parts.put(ledger.RunID{Job: run.ID.Job, Nominal: run.ID.Nominal, Generation: g}, max(int(n), 1))
		}
	}
}

// partitions returns the item partition count of run's generation: from
// the cache, or from one consistent read of the run record. A run with no
// record, or a generation the record does not know yet, reads as one
// partition (and is not cached): nothing of it was written partitioned.
func (s *LedgerStore) partitions(ctx context.Context, run ledger.RunID) (int, error) {
	if n, ok := s.parts.get(run); ok {
		return n, nil
	}
	rec, err := s.t.get(ctx, "read the partitions of "+run.String(), runKey(run.Job, run.Nominal))
	if err != nil || rec == nil {
		return 1, err
	}
	cur, err := decodeRun(rec)
	if err != nil {
		return 0, fmt.Errorf("read the partitions of %s: %w", run, err)
	}
	s.remember(rec, cur)
	if n, ok := s.parts.get(run); ok {
		return n, nil
	}
	return 1, nil
}

// itemKeyOf returns the record key of k, reading its generation's
// partition count when it is not known.
func (s *LedgerStore) itemKeyOf(ctx context.Context, k ledger.ItemKey) (key, error) {
	parts, err := s.partitions(ctx, k.Run)
	if err != nil {
		return key{}, err
	}
	return key{itemPK(k.Run, k.Asset, parts), k.Asset}, nil
}
