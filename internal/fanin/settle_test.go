package fanin_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/fanin"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/sqlite"
)

func TestShards(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]int{0: 1, 1: 1, 64: 1, 65: 2, 128: 2, 300: 5, 4096: 64, 4097: 65} {
		require.Equal(t, want, fanin.Shards(n), "n=%d", n)
	}
}

// crashing is a ledger whose FinishRun and MarkDone can be made to fail,
// as a process that dies at that write would, and that records the
// largest list of items any call read.
type crashing struct {
	ledger.Store
	mu                sync.Mutex
	failFinish        bool
	failMarkAt        int // fail MarkDone at this level; -1: never
	listed, wholeRuns int
	// ranges and read count ListItemRange calls and the records they
	// returned.
	ranges, read int
}

var errCrash = errors.New("crashed on purpose")

func (c *crashing) FinishRun(ctx context.Context, p ledger.FinishRunParams) (ledger.Run, error) {
	c.mu.Lock()
	fail := c.failFinish
	c.mu.Unlock()
	if fail {
		return ledger.Run{}, errCrash
	}
	return c.Store.FinishRun(ctx, p)
}

func (c *crashing) MarkDone(ctx context.Context, p ledger.MarkParams) (ledger.Mark, error) {
	c.mu.Lock()
	fail := c.failMarkAt == p.Level
	c.mu.Unlock()
	if fail {
		return ledger.Mark{}, errCrash
	}
	return c.Store.MarkDone(ctx, p)
}

func (c *crashing) ListItemRange(ctx context.Context, run ledger.RunID, first, last string) ([]ledger.Item, error) {
	items, err := c.Store.ListItemRange(ctx, run, first, last)
	c.mu.Lock()
	c.listed = max(c.listed, len(items))
	c.ranges++
	c.read += len(items)
	c.mu.Unlock()
	return items, err
}

func (c *crashing) ListItems(ctx context.Context, run ledger.RunID) ([]ledger.Item, error) {
	c.mu.Lock()
	c.wholeRuns++
	c.mu.Unlock()
	return c.Store.ListItems(ctx, run)
}

func (c *crashing) set(f func(c *crashing)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c)
}

// bigRun is a fanned-out run of n assets (and the job's derived items) on
// the embedded store, opened with fanin.Shards.
type bigRun struct {
	l   *crashing
	job baton.Job
	run ledger.Run
	now time.Time
}

var bigRuns atomic.Int64

func setupBig(t *testing.T, n int, derived []baton.Derived) *bigRun {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	assets := make([]string, n)
	for i := range assets {
		assets[i] = fmt.Sprintf("A%05d", (i*7919)%n) // not in name order
	}
	// A job name of its own: settles keep per-process state by run
	// (where each shard's probe lies), which other tests must not share.
	j := baton.Job{Name: fmt.Sprintf("big-%d", bigRuns.Add(1)), Schedule: "rate(1 minute)", Assets: assets, Derived: derived,
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })}
	require.NoError(t, j.Validate())
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	l := &crashing{Store: sqlite.NewLedgerStore(db), failMarkAt: -1}
	run, _, err := l.OpenRun(t.Context(), ledger.OpenRunParams{Job: j.Name, Nominal: now, Fence: 1, Shards: fanin.Shards(len(jobspec.ItemNames(j))), Now: now})
	require.NoError(t, err)
	run, err = l.AdvanceRun(t.Context(), ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: n, Done: true, Now: now})
	require.NoError(t, err)
	return &bigRun{l: l, job: j, run: run, now: now}
}

// end ends the item: cancelled when cancel is set, else succeeded.
func (b *bigRun) end(t *testing.T, asset string, cancel bool) {
	t.Helper()
	key := ledger.ItemKey{Run: b.run.ID, Asset: asset}
	if cancel {
		_, err := b.l.Cancel(t.Context(), ledger.CancelParams{Key: key, Reason: "test", Now: b.now})
		require.NoError(t, err)
		return
	}
	_, err := b.l.Claim(t.Context(), ledger.ClaimParams{Key: key, Owner: "w", LeaseUntil: b.now.Add(time.Minute), Now: b.now})
	require.NoError(t, err)
	_, err = b.l.Complete(t.Context(), ledger.CompleteParams{Key: key, Owner: "w", Attempt: 1, Now: b.now})
	require.NoError(t, err)
}

// settle is what the consumer that ended asset does.
func (b *bigRun) settle(t *testing.T, asset string) (ledger.Run, error) {
	t.Helper()
	return fanin.SettleShard(t.Context(), fanin.ShardParams{Ledger: b.l, Def: b.job, Run: b.run, Item: asset, Now: b.now})
}

// Every item's end settles its shard; the run finishes at its last item's
// end, whichever item it is, and not before; no call reads more than a
// shard.
func TestSettleShardFinishesAtTheLastItem(t *testing.T) {
	t.Parallel()
	b := setupBig(t, 300, nil)
	require.Equal(t, 5, b.run.Shards)
	names := jobspec.ItemNames(b.job)
	for i, a := range names {
		b.end(t, a, i%50 == 7)
		run, err := b.settle(t, a)
		require.NoError(t, err)
		if i < len(names)-1 {
			require.Equal(t, ledger.RunFannedOut, run.State, "after %d of %d items", i+1, len(names))
		} else {
			require.Equal(t, ledger.RunPartial, run.State, "at the last item")
			require.Equal(t, [3]int{294, 0, 6}, [3]int{run.Succeeded, run.Dead, run.Cancelled})
		}
	}
	got, err := b.l.GetRun(t.Context(), b.job.Name, b.now)
	require.NoError(t, err)
	require.Equal(t, ledger.RunPartial, got.State)
	require.LessOrEqual(t, b.l.listed, fanin.ShardItems, "a settle reads one shard")
	require.Zero(t, b.l.wholeRuns, "no settle reads the whole run")
}

// While one of the last fanin.ProbeItems names of a shard (its probe) has
// not ended, a settle reads those records only; the shard is listed once
// they have all ended. Items ending in name order end their shard's probe
// last, so a run of 300 items in 5 shards lists each shard once, at its
// last item.
func TestSettleShardReadsTheProbeOnlyWhileItIsInFlight(t *testing.T) {
	t.Parallel()
	b := setupBig(t, 300, nil)
	names := slices.Sorted(slices.Values(jobspec.ItemNames(b.job)))
	listed := 0 // settles that listed a shard
	for i, a := range names {
		b.end(t, a, false)
		b.l.set(func(c *crashing) { c.ranges, c.read = 0, 0 })
		run, err := b.settle(t, a)
		require.NoError(t, err)
		if i < len(names)-1 {
			require.Equal(t, ledger.RunFannedOut, run.State, "after %d of %d items", i+1, len(names))
		}
		b.l.set(func(c *crashing) {
			require.Equal(t, 1, c.ranges, "%s: one read", a)
			if shard := b.shardOf(t, a); a == shard[len(shard)-1] {
				listed++ // the shard's last name ends it: no probe
				require.Equal(t, len(shard), c.read, "%s: its shard", a)
			} else {
				require.LessOrEqual(t, c.read, fanin.ProbeItems, "%s: the probe's records only", a)
			}
		})
	}
	require.Equal(t, 5, listed, "one list per shard, at its last item")
	got, err := b.l.GetRun(t.Context(), b.job.Name, b.now)
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, got.State)
	require.Equal(t, 300, got.Succeeded)
}

// Items that end in no order: the run finishes at its last item, and not
// before, and the probe (moved to the names a list found in flight) keeps
// most settles from listing their shard.
func TestSettleShardInRandomOrder(t *testing.T) {
	t.Parallel()
	b := setupBig(t, 300, nil)
	names := slices.Clone(jobspec.ItemNames(b.job))
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for i, a := range names {
		b.end(t, a, false)
		run, err := b.settle(t, a)
		require.NoError(t, err)
		if i < len(names)-1 {
			require.Equal(t, ledger.RunFannedOut, run.State, "after %d of %d items", i+1, len(names))
		} else {
			require.Equal(t, ledger.RunComplete, run.State, "at the last item")
		}
	}
	t.Logf("%d reads, %d records for %d items", b.l.ranges, b.l.read, len(names))
	require.Less(t, b.l.read, len(names)*fanin.ShardItems/6, "records read")
	// A probe at the tail of the shard alone lists 29 times here: the
	// names seen in flight by a list make the next probe.
	require.LessOrEqual(t, b.l.ranges-len(names), 15, "settles that listed their shard")
}

// shardOf returns the names of asset's shard: the run's names in
// byte-wise order, cut in b.run.Shards equal parts.
func (b *bigRun) shardOf(t *testing.T, asset string) []string {
	t.Helper()
	names := slices.Sorted(slices.Values(jobspec.ItemNames(b.job)))
	size := (len(names) + b.run.Shards - 1) / b.run.Shards
	i := slices.Index(names, asset)
	require.GreaterOrEqual(t, i, 0)
	lo := i / size * size
	return names[lo:min(lo+size, len(names))]
}

// Items that end in reverse name order end each shard's probe first: the
// probe no longer stops the settles, and the run still finishes at its
// last item, and not before.
func TestSettleShardFinishesAtTheLastItemInReverseOrder(t *testing.T) {
	t.Parallel()
	b := setupBig(t, 300, nil)
	names := slices.Sorted(slices.Values(jobspec.ItemNames(b.job)))
	slices.Reverse(names)
	for i, a := range names {
		b.end(t, a, false)
		run, err := b.settle(t, a)
		require.NoError(t, err)
		if i < len(names)-1 {
			require.Equal(t, ledger.RunFannedOut, run.State, "after %d of %d items", i+1, len(names))
		} else {
			require.Equal(t, ledger.RunComplete, run.State, "at the last item")
		}
	}
}

// A settle of several items that ended (a consumer's batch) settles each
// of their shards once: a probe that is one of them is not read, and the
// run finishes when they were its last.
func TestSettleShardOfSeveralItemsSettlesEachShardOnce(t *testing.T) {
	t.Parallel()
	b := setupBig(t, 300, nil)
	names := jobspec.ItemNames(b.job)
	for _, a := range names {
		b.end(t, a, false)
	}
	run, err := fanin.SettleShard(t.Context(), fanin.ShardParams{Ledger: b.l, Def: b.job, Run: b.run,
		Item: names[0], Items: names[1:], Now: b.now})
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, 300, run.Succeeded)
	require.Equal(t, 5, b.l.ranges, "one list per shard, no probe read")
	require.Equal(t, 300, b.l.read)
}

// A crash between the last shard's mark and the run's finish: the next
// settle of that shard (a redelivered message) finishes the run, and so
// does the coordinator's Settle.
func TestSettleRecoversACrashBeforeTheFinish(t *testing.T) {
	t.Parallel()
	for _, by := range []string{"redelivery", "coordinator"} {
		t.Run(by, func(t *testing.T) {
			t.Parallel()
			b := setupBig(t, 300, []baton.Derived{{Name: "SUM", Inputs: []string{"A00001", "A00299"}}})
			names := jobspec.ItemNames(b.job)
			last := names[len(names)-1]
			for _, a := range names[:len(names)-1] {
				b.end(t, a, false)
				_, err := b.settle(t, a)
				require.NoError(t, err)
			}
			b.end(t, last, false)
			b.l.set(func(c *crashing) { c.failFinish = true })
			_, err := b.settle(t, last)
			require.ErrorIs(t, err, errCrash)
			run, err := b.l.GetRun(t.Context(), b.job.Name, b.now)
			require.NoError(t, err)
			require.Equal(t, ledger.RunFannedOut, run.State, "the crash left the run fanned out")
			marks, err := b.l.ListMarks(t.Context(), b.run.ID, 0, 0)
			require.NoError(t, err)
			require.Len(t, marks, 5, "every shard marked")

			b.l.set(func(c *crashing) { c.failFinish = false })
			if by == "redelivery" {
				run, err = b.settle(t, last)
			} else {
				run, err = fanin.Settle(t.Context(), fanin.SettleParams{Ledger: b.l, Def: b.job, Run: b.run, Now: b.now})
			}
			require.NoError(t, err)
			require.Equal(t, ledger.RunComplete, run.State)
			require.Equal(t, 301, run.Succeeded)
		})
	}
}

// A run of more shards than a mark group climbs two levels; a crash
// between a shard's mark and its group's mark is recovered by the next
// settle of any shard of that group, and no partition of marks takes more
// than a group's writes.
func TestSettleClimbsTwoLevels(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: a run of 4,200 items")
	}
	n := 4200
	b := setupBig(t, n, nil)
	require.Equal(t, 66, b.run.Shards, "two groups of marks at level 0")
	names := jobspec.ItemNames(b.job)
	for _, a := range names {
		b.end(t, a, true) // one write each
	}
	// Settle every shard but the last of group 0 as its items' consumers
	// would, then that one with the level-1 mark crashing.
	sorted := append([]string(nil), names...)
	slices.Sort(sorted)
	size := (n + 65) / 66
	shardFirst := func(s int) string { return sorted[s*size] }
	for s := range 66 {
		if s == 63 {
			continue
		}
		run, err := b.settle(t, shardFirst(s))
		require.NoError(t, err)
		require.Equal(t, ledger.RunFannedOut, run.State, "shard %d", s)
	}
	b.l.set(func(c *crashing) { c.failMarkAt = 1 })
	_, err := b.settle(t, shardFirst(63))
	require.ErrorIs(t, err, errCrash)
	up, err := b.l.ListMarks(t.Context(), b.run.ID, 1, 0)
	require.NoError(t, err)
	require.Len(t, up, 1, "group 1's mark only: group 0's crashed")

	b.l.set(func(c *crashing) { c.failMarkAt = -1 })
	run, err := b.settle(t, shardFirst(10)) // any shard of group 0, redelivered
	require.NoError(t, err)
	require.Equal(t, ledger.RunPartial, run.State)
	require.Equal(t, n, run.Cancelled)
	for g, want := range []int{64, 2} {
		marks, err := b.l.ListMarks(t.Context(), b.run.ID, 0, g)
		require.NoError(t, err)
		require.Len(t, marks, want, "level 0 group %d", g)
	}
}

// The fan-in check of a large run reads the items it judges, not the run.
func TestCheckOfALargeRunReadsItsItemsOnly(t *testing.T) {
	t.Parallel()
	b := setupBig(t, 300, []baton.Derived{
		{Name: "SUM", Inputs: []string{"A00001", "A00299"}},
		{Name: "WIDE", Inputs: []string{"A00010", "A00011", "A00012", "A00013", "A00014", "A00015", "A00016", "A00017", "A00018", "A00019", "A00020", "A00021", "A00022", "A00023", "A00024", "A00025", "A00026"}},
	})
	b.end(t, "A00001", false)
	b.end(t, "A00299", true)
	for i := 10; i <= 26; i++ {
		b.end(t, fmt.Sprintf("A%05d", i), false)
	}
	q := &sent{}
	res, err := fanin.Check(t.Context(), fanin.Params{Ledger: b.l, Queue: q, Def: b.job, Run: b.run.ID, Fence: 1, Now: b.now})
	require.NoError(t, err)
	require.Equal(t, []string{"SUM"}, res.Cancelled)
	require.Equal(t, []string{"WIDE"}, res.Enqueued)
	require.Zero(t, b.l.wholeRuns, "the run is not listed whole")
	require.LessOrEqual(t, b.l.listed, fanin.ShardItems, "no read returns more than a shard")
}

// A run opened by an earlier version has no shard count (Shards 0): its
// consumers settle it only when it holds at most fanin.LegacySettleMax
// items, reading it whole as before; a larger one is settled by the
// coordinator's Settle, as one shard.
func TestSettleOfARunOfAnEarlierVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		assets     int
		byConsumer bool
	}{{fanin.LegacySettleMax, true}, {fanin.LegacySettleMax + 1, false}} {
		t.Run(fmt.Sprint(tc.assets), func(t *testing.T) {
			t.Parallel()
			b := setupBig(t, tc.assets, nil)
			b.run.Shards = 0 // as an earlier version's record reads
			names := jobspec.ItemNames(b.job)
			for _, a := range names {
				b.end(t, a, false)
			}
			run, err := b.settle(t, names[len(names)-1])
			require.NoError(t, err)
			if tc.byConsumer {
				require.Equal(t, ledger.RunComplete, run.State)
				return
			}
			require.Equal(t, ledger.RunFannedOut, run.State, "left to the coordinator")
			run, err = fanin.Settle(t.Context(), fanin.SettleParams{Ledger: b.l, Def: b.job, Run: b.run, Now: b.now})
			require.NoError(t, err)
			require.Equal(t, ledger.RunComplete, run.State)
			require.Equal(t, tc.assets, run.Succeeded)
		})
	}
}

// Shards whose items all end while the run is still fanning out are not
// marked by their consumers (the run is not fanned out yet). The
// coordinator that marks the run fanned out sweeps every shard once, so
// that when a shard in front of them ends later, its consumer's climb
// finds the group complete and the run settles at its last item. Without
// the sweep the settle stops at the shard in flight, the shards behind it
// stay unmarked, and the run waits for the job's next trigger.
func TestSweepAfterFanOutMarksShardsThatEndedDuringIt(t *testing.T) {
	t.Parallel()
	for _, sweep := range []bool{true, false} {
		t.Run(fmt.Sprintf("sweep=%v", sweep), func(t *testing.T) {
			t.Parallel()
			b := setupBig(t, 300, nil)
			// Reopen as a fresh generation still fanning out.
			run, _, err := b.l.OpenRun(t.Context(), ledger.OpenRunParams{Job: b.job.Name, Nominal: b.now, Fence: 2, Force: true, Shards: fanin.Shards(300), Now: b.now})
			require.NoError(t, err)
			b.run = run
			names := append([]string(nil), jobspec.ItemNames(b.job)...)
			slices.Sort(names)
			inFlight := names[100] // shard 1 of 5 (60 names each)
			for _, a := range names {
				if a == inFlight {
					continue
				}
				b.end(t, a, false)
				got, err := b.settle(t, a) // the consumer sees the run fanning out
				require.NoError(t, err)
				require.Equal(t, ledger.RunFanningOut, got.State)
			}
			b.run, err = b.l.AdvanceRun(t.Context(), ledger.AdvanceRunParams{ID: run.ID, Fence: 2, Cursor: 300, Done: true, Now: b.now})
			require.NoError(t, err)
			got, err := fanin.Settle(t.Context(), fanin.SettleParams{Ledger: b.l, Def: b.job, Run: b.run, Sweep: sweep, Now: b.now})
			require.NoError(t, err)
			require.Equal(t, ledger.RunFannedOut, got.State, "one item in flight")

			b.end(t, inFlight, false)
			got, err = b.settle(t, inFlight)
			require.NoError(t, err)
			if sweep {
				require.Equal(t, ledger.RunComplete, got.State, "settled at its last item")
				require.Equal(t, 300, got.Succeeded)
			} else {
				require.Equal(t, ledger.RunFannedOut, got.State, "without the sweep, shards 2-4 were never marked")
			}
			require.LessOrEqual(t, b.l.listed, fanin.ShardItems, "each read is one shard")
		})
	}
}

// A consumer whose cached run record still says fanning out (read before
// the coordinator marked it fanned out, so its Total is not set) settles
// with the catalog's shards and reads the run again only when a shard is
// complete: no read per batch, no mark while the fresh record still
// fans out, and a mark once it is fanned out.
func TestSettleOfARunReadFanningOutReadsItOncePerCompleteShard(t *testing.T) {
	t.Parallel()
	b := setupBig(t, 300, nil)
	stale := b.run
	stale.State, stale.Total, stale.Cursor = ledger.RunFanningOut, 0, 0
	fannedOut := false
	refreshes := 0
	refresh := func(ctx context.Context) (ledger.Run, error) {
		refreshes++
		if !fannedOut {
			r := stale
			r.Cursor = 250
			return r, nil
		}
		return b.l.GetRun(ctx, b.job.Name, b.now)
	}
	names := jobspec.ItemNames(b.job)
	settle := func(a string) ledger.Run {
		run, err := fanin.SettleShard(t.Context(), fanin.ShardParams{Ledger: b.l, Def: b.job, Run: stale, Item: a, Refresh: refresh, Now: b.now})
		require.NoError(t, err)
		return run
	}
	for _, a := range names[:len(names)-1] {
		b.end(t, a, false)
		require.NotEqual(t, ledger.RunComplete, settle(a).State)
	}
	require.LessOrEqual(t, refreshes, b.run.Shards, "a read per complete shard, not per settle")
	require.Positive(t, refreshes, "a complete shard reads the run again")
	marks, err := b.l.ListMarks(t.Context(), b.run.ID, 0, 0)
	require.NoError(t, err)
	require.Empty(t, marks, "no mark while the run read again still fans out")

	fannedOut = true
	last := names[len(names)-1]
	b.end(t, last, false)
	settle(last)
	marks, err = b.l.ListMarks(t.Context(), b.run.ID, 0, 0)
	require.NoError(t, err)
	require.Len(t, marks, 1, "once fanned out, the last item's shard is marked (the coordinator's sweep after the fan-out marks the others)")
}

// rangesLedger is a crashing ledger that reads several ranges at once
// (ledger.RangesLister, as PostgreSQL's in one round trip): it counts
// those calls.
type rangesLedger struct {
	*crashing
	calls  int
	ranges []int // the ranges of each call
}

func (r *rangesLedger) ListItemRanges(ctx context.Context, run ledger.RunID, rs []ledger.ItemRange) ([][]ledger.Item, error) {
	out := make([][]ledger.Item, len(rs))
	for i, x := range rs {
		items, err := r.Store.ListItemRange(ctx, run, x.First, x.Last) // not counted as a single read
		if err != nil {
			return nil, err
		}
		out[i] = items
	}
	r.mu.Lock()
	r.calls++
	r.ranges = append(r.ranges, len(rs))
	r.mu.Unlock()
	return out, nil
}

// On a store that reads several ranges at once, the settle of a batch's
// items that ended in several shards reads their probes in one call and
// the shards whose probe ended in another, whatever the number of
// shards; the shards complete are marked, the one in flight is not, and
// the run finishes at its last item as ever.
func TestSettleReadsTheShardsOfABatchTogether(t *testing.T) {
	t.Parallel()
	b := setupBig(t, 300, nil)
	rl := &rangesLedger{crashing: b.l}
	names := slices.Sorted(slices.Values(jobspec.ItemNames(b.job)))
	const size = 64                // fanin.Shards(300) = 5 shards of 64
	ended := names[:3*size+size/2] // shards 0, 1 and 2 whole, half of shard 3
	for _, a := range ended {
		b.end(t, a, false)
	}
	run, err := fanin.SettleShard(t.Context(), fanin.ShardParams{Ledger: rl, Def: b.job, Run: b.run,
		Item: ended[0], Items: ended[1:], Now: b.now})
	require.NoError(t, err)
	require.Equal(t, ledger.RunFannedOut, run.State)
	require.Equal(t, 2, rl.calls, "one read of the probes, one of the shards whose probe ended")
	require.Equal(t, []int{1, 3}, rl.ranges, "shard 3's probe; shards 0, 1 and 2 (their last item ended: no probe)")
	require.Zero(t, b.l.ranges, "no range read alone")
	marks, err := b.l.ListMarks(t.Context(), b.run.ID, 0, 0)
	require.NoError(t, err)
	require.Len(t, marks, 3, "shards 0, 1 and 2 marked")

	rest := names[len(ended):]
	for _, a := range rest {
		b.end(t, a, false)
	}
	run, err = fanin.SettleShard(t.Context(), fanin.ShardParams{Ledger: rl, Def: b.job, Run: b.run,
		Item: rest[0], Items: rest[1:], Now: b.now})
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, 300, run.Succeeded)
}

// An item left RUNNING under a claim that ended an item lease ago or
// more (its consumers died at the last receives of its messages, which
// the queue's redrive then dead-lettered) is sent again by the
// settle of a trigger (Resend), once per settle, derived items by the
// fan-in check alone; under a live claim, or one just expired, nothing is sent.
// A settle without a queue (a consumer's) sends nothing.
func TestSettleResendsOrphanedItems(t *testing.T) {
	t.Parallel()
	b := setupBig(t, 100, []baton.Derived{{Name: "SUM", Inputs: []string{"A00001", "A00099"}}})
	names := jobspec.ItemNames(b.job)
	orphan := "A00042"
	for _, a := range names {
		if a != orphan && a != "SUM" {
			b.end(t, a, false)
		}
	}
	var until time.Time
	for _, a := range []string{orphan, "SUM"} {
		it, err := b.l.Claim(t.Context(), ledger.ClaimParams{Key: ledger.ItemKey{Run: b.run.ID, Asset: a}, Owner: "dead", LeaseUntil: b.now.Add(time.Minute), Now: b.now})
		require.NoError(t, err)
		until = it.LeaseUntil
	}
	lease := jobspec.ItemLease(b.job, orphan)
	for _, c := range []struct {
		at   time.Time
		sent []string
	}{
		{b.now, nil},
		{until.Add(lease - time.Second), nil},
		{until.Add(lease), []string{"SUM", orphan}},
	} {
		q := &sent{}
		run, err := fanin.Settle(t.Context(), fanin.SettleParams{Ledger: b.l, Queue: q, Def: b.job, Run: b.run, Sweep: true, Now: c.at})
		require.NoError(t, err)
		require.Empty(t, q.msgs, "without Resend (a caller polling Settle), nothing is sent")
		run, err = fanin.Settle(t.Context(), fanin.SettleParams{Ledger: b.l, Queue: q, Def: b.job, Run: b.run, Sweep: true, Resend: true, Now: c.at})
		require.NoError(t, err)
		require.Equal(t, ledger.RunFannedOut, run.State)
		var got []string
		for _, k := range q.msgs {
			key, err := ledger.ParseItemKey(k)
			require.NoError(t, err)
			got = append(got, key.Asset)
		}
		require.Equal(t, c.sent, got, "at %s", c.at)
	}
	run, err := fanin.Settle(t.Context(), fanin.SettleParams{Ledger: b.l, Def: b.job, Run: b.run, Resend: true, Now: until.Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, ledger.RunFannedOut, run.State, "no queue: nothing sent, nothing lost")
}
