package awsdynamodb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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

// A run whose items are its stored pages (ledger.OpenRunParams.Pages)
// is partitioned by page instead (runPartsPage): the items of page i live
// in ITEMS#<run id>#P<ledger.PagePartition(i, parts)>, so that a page is
// one bounded Query and the pages consumers work on together are in
// different keys. A store finds an item's page from the stored pages,
// whose names are in order: it keeps the name range of every page it
// read or wrote (pageRanges, bounded), which covers the items a consumer
// works on (it reads their page to check membership first), and
// otherwise searches the pages (about 2·log2(pages) consistent reads,
// for an operator's command on one item).

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
	// runPartsPage (Number, 1) says the current generation's items are
	// partitioned by page, valid only when runPartsPageTok equals
	// runOpenToken (the write that opened the generation set it); absent
	// in records of earlier versions, which read as partitioned by name.
	runPartsPage    = "parts_page"
	runPartsPageTok = "parts_page_tok"
	// runPartsPageOf is the prefix of parts_page_<gen>: 1 when a
	// superseded generation was partitioned by page.
	runPartsPageOf = "parts_page_"
)

// runParts is how a run generation's items are partitioned.
type runLayout struct {
	n     int  // partitions, at least 1
	pages bool // by page (ledger.PagePartition), not by name
}

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

// partsCache holds the item partitioning of run generations.
type partsCache struct {
	mu sync.Mutex
	m  map[string]runLayout
}

func (c *partsCache) get(run ledger.RunID) (runLayout, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.m[run.String()]
	return l, ok
}

func (c *partsCache) put(run ledger.RunID, l runLayout) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= partsCacheMax {
		c.m = make(map[string]runLayout)
	}
	c.m[run.String()] = l
}

// remember keeps the partitioning a run record holds: its current
// generation's and those of the generations it superseded.
func (s *LedgerStore) remember(rec record, run ledger.Run) {
	s.parts.put(run.ID, runLayout{n: max(run.Partitions, 1), pages: run.Pages})
	for g := 1; g < run.ID.Generation; g++ {
		if n, ok := numAttr(rec, runPartsOf+strconv.Itoa(g)); ok {
			byPage, _ := numAttr(rec, runPartsPageOf+strconv.Itoa(g))
			s.parts.put(ledger.RunID{Job: run.ID.Job, Nominal: run.ID.Nominal, Generation: g},
				runLayout{n: max(int(n), 1), pages: byPage == 1 && n > 1})
		}
	}
}

// partitions returns the item partitioning of run's generation: from the
// cache, or from one consistent read of the run record. A run with no
// record, or a generation the record does not know yet, reads as one
// partition (and is not cached): nothing of it was written partitioned.
func (s *LedgerStore) partitions(ctx context.Context, run ledger.RunID) (runLayout, error) {
	if l, ok := s.parts.get(run); ok {
		return l, nil
	}
	rec, err := s.t.get(ctx, "read the partitions of "+run.String(), runKey(run.Job, run.Nominal))
	if err != nil || rec == nil {
		return runLayout{n: 1}, err
	}
	cur, err := decodeRun(rec)
	if err != nil {
		return runLayout{}, fmt.Errorf("read the partitions of %s: %w", run, err)
	}
	s.remember(rec, cur)
	if l, ok := s.parts.get(run); ok {
		return l, nil
	}
	return runLayout{n: 1}, nil
}

// itemPKOf returns the partition key of the item called asset of run,
// reading its generation's partitioning when it is not known and, for a
// run partitioned by page, finding the item's page (locatePage).
func (s *LedgerStore) itemPKOf(ctx context.Context, run ledger.RunID, asset string) (string, error) {
	l, err := s.partitions(ctx, run)
	if err != nil {
		return "", err
	}
	if !l.pages || l.n <= 1 {
		return itemPK(run, asset, l.n), nil
	}
	page, err := s.locatePage(ctx, run, asset)
	if err != nil {
		return "", err
	}
	return partPK(run, ledger.PagePartition(page, l.n)), nil
}

// itemKeyOf returns the record key of k (see itemPKOf).
func (s *LedgerStore) itemKeyOf(ctx context.Context, k ledger.ItemKey) (key, error) {
	pk, err := s.itemPKOf(ctx, k.Run, k.Asset)
	if err != nil {
		return key{}, err
	}
	return key{pk, k.Asset}, nil
}

// pageRangesMax bounds the page ranges a store keeps: past it they are
// forgotten (and found again by reading pages). 16,384 pages of 64 items
// cover a million items in at most a few MiB.
const pageRangesMax = 16384

// pageRange is the name range of one stored page.
type pageRange struct {
	first, last string
	index       int
}

// pageRanges keeps the name ranges of the pages a store read or wrote,
// per run generation, sorted by first name.
type pageRanges struct {
	mu sync.Mutex
	m  map[string][]pageRange
	n  int
}

// add keeps pg's range.
func (c *pageRanges) add(pg ledger.Page) {
	if len(pg.Items) == 0 {
		return
	}
	r := pageRange{first: pg.Items[0].Name, last: pg.Items[len(pg.Items)-1].Name, index: pg.Index}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || c.n >= pageRangesMax {
		c.m, c.n = make(map[string][]pageRange), 0
	}
	k := pg.Run.String()
	rs := c.m[k]
	i, found := slices.BinarySearchFunc(rs, r.first, func(e pageRange, t string) int { return strings.Compare(e.first, t) })
	if found {
		return
	}
	c.m[k] = slices.Insert(rs, i, r)
	c.n++
}

// find returns the index of the kept page of run whose range holds name.
func (c *pageRanges) find(run ledger.RunID, name string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rs := c.m[run.String()]
	i, found := slices.BinarySearchFunc(rs, name, func(e pageRange, t string) int { return strings.Compare(e.first, t) })
	if !found {
		i-- // the last range starting before name
	}
	if i >= 0 && i < len(rs) && rs[i].first <= name && name <= rs[i].last {
		return rs[i].index, true
	}
	return 0, false
}

// locatePage returns the index of the stored page of run that holds the
// item called name: from the kept ranges, or by searching the stored
// pages (their names ascend from page to page): doubling the index until
// a page starts after name or does not exist, then halving. An item on
// no stored page is an error matching ledger.ErrNotFound.
func (s *LedgerStore) locatePage(ctx context.Context, run ledger.RunID, name string) (int, error) {
	if i, ok := s.ranges.find(run, name); ok {
		return i, nil
	}
	notFound := fmt.Errorf("item %q of %s is on no stored page of the run's list: %w", name, run, ledger.ErrNotFound)
	// after(i): page i starts after name or does not exist (or the list
	// ended before it).
	final := -1
	read := make(map[int]ledger.Page)
	after := func(i int) (bool, error) {
		if final >= 0 && i > final {
			return true, nil
		}
		pg, err := s.GetPage(ctx, run, i)
		if errors.Is(err, ledger.ErrNotFound) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		read[i] = pg
		if pg.Final {
			final = i
		}
		return len(pg.Items) == 0 || pg.Items[0].Name > name, nil
	}
	if a, err := after(0); err != nil || a {
		if err != nil {
			return 0, err
		}
		return 0, notFound
	}
	lo, hi := 0, 1 // page lo starts at or before name; hi is past it or unknown
	for {
		a, err := after(hi)
		if err != nil {
			return 0, err
		}
		if a {
			break
		}
		lo, hi = hi, hi*2
	}
	for hi-lo > 1 {
		m := lo + (hi-lo)/2
		a, err := after(m)
		if err != nil {
			return 0, err
		}
		if a {
			hi = m
		} else {
			lo = m
		}
	}
	if pg := read[lo]; len(pg.Items) > 0 && name <= pg.Items[len(pg.Items)-1].Name {
		return lo, nil
	}
	return 0, notFound
}
