package fanin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/telemetry"
)

// ShardItems is the most items a shard holds when a run opens: a run of n
// items opens with Shards(n) shards.
const ShardItems = 64

// LegacySettleMax is the largest run opened by an earlier version
// (Run.Shards 0, no shards) that a consumer settles itself by listing it
// whole; larger ones settle by the coordinator's settling pass.
const LegacySettleMax = 64

// Shards returns the shard count of a run of n items: n/ShardItems
// rounded up, at least 1.
func Shards(n int) int { return max(1, (n+ShardItems-1)/ShardItems) }

// SettleParams are the inputs of Settle.
type SettleParams struct {
	Ledger ledger.Store
	// Queue receives derived items found ready that never ran; nil:
	// nothing is enqueued.
	Queue queue.Sender
	Def   baton.Job
	Run   ledger.Run // as read: Settle acts only on a run fanned out
	// Sweep reads every shard, marking each complete one, instead of
	// stopping at the first shard in flight. The coordinator that has just
	// marked the run fanned out sweeps it once: a shard whose items all
	// ended while the run was still fanning out was not marked by their
	// consumers (SettleShard acts only on a run fanned out), and when it
	// lies after a shard still in flight, the consumer that ends that
	// shard's last item would find the group incomplete and nobody would
	// climb further. After the sweep every complete shard is marked, and a
	// shard still in flight is marked by the consumer of its last item.
	Sweep bool
	// Resend sends again, through Queue, the items found orphaned (see
	// Orphaned): the fan-in check's derived items, and the others of the
	// shards read. The coordinator's settles on a trigger set it (once
	// per invocation); a caller that polls Settle does not, so that a
	// poll does not add a message each time.
	Resend bool
	Now    time.Time
}

// Settle finishes run when every item of it has ended: a run fanned out
// whose assets (the first Total of the job's) and derived items are all
// terminal becomes complete (all SUCCEEDED) or partial, with its counts.
// Before that, the fan-in check runs over the run's derived items: those
// whose inputs ended DEAD or CANCELLED are cancelled, so that a run
// always settles, and those whose inputs all SUCCEEDED but which never
// ran are enqueued again (the last resort when every input's own check
// failed). It then settles every shard (SettleShard), reading one shard
// at a time, so its memory does not grow with the run. It returns the run
// as it is after the call: unchanged when it is not fanned out or has
// items in flight; as someone else finished it when the finish finds it
// terminal.
func Settle(ctx context.Context, p SettleParams) (ledger.Run, error) {
	run := p.Run
	if run.State != ledger.RunFannedOut {
		return run, nil
	}
	l := newLayout(p.Def, run)
	if len(p.Def.Derived) > 0 && !l.pages {
		items, err := l.fanInItems(ctx, p.Ledger, run.ID, p.Def)
		if err != nil {
			return run, fmt.Errorf("settle %s: %w", run.ID, err)
		}
		if _, err := Check(ctx, Params{Ledger: p.Ledger, Queue: p.Queue, Def: p.Def, Run: run.ID, Partitions: run.Partitions, Fence: run.Fence, Items: items, Resend: p.Resend, Now: p.Now}); err != nil {
			return run, fmt.Errorf("settle %s: %w", run.ID, err)
		}
	}
	// A shard in flight means the run is: unless sweeping, the shards
	// after it are not read (the consumer that ends its last item climbs
	// from there, and a later Settle marks every shard once all are
	// complete).
	for s := range l.shards {
		var err error
		var complete bool
		var orphans []ledger.Item
		probe := shardProbe{}
		if p.Queue != nil && p.Resend {
			probe.orphan = func(it ledger.Item) {
				if !jobspec.IsDerived(p.Def, it.Key.Asset) && Orphaned(it, p.Def, p.Now) {
					orphans = append(orphans, it)
				}
			}
		}
		if run, complete, err = l.settleShard(ctx, p.Ledger, run, s, nil, probe, p.Now); err != nil || run.State.Finished() {
			return run, err
		}
		if err := resend(ctx, p.Queue, run, l.pages, s, orphans); err != nil {
			return run, err
		}
		if !complete && !p.Sweep {
			return run, nil
		}
	}
	return run, nil
}

// resend sends again the items of shard s of run found orphaned (their
// derived items excepted: the fan-in check sends those), one message each
// as the coordinator's fan-out made it: a page's item names its page.
func resend(ctx context.Context, q queue.Sender, run ledger.Run, pages bool, s int, orphans []ledger.Item) error {
	var msgs []queue.Message
	var keys []string
	for _, it := range orphans {
		m := message.New(it.Key, run.Fence, false)
		if pages {
			m = message.NewPaged(it.Key, run.Fence, s)
		}
		msgs = append(msgs, m.QueueMessage())
		keys = append(keys, it.Key.Asset)
	}
	if len(msgs) == 0 {
		return nil
	}
	telemetry.Stamp(ctx, msgs)
	if _, err := queue.SendAll(ctx, q, msgs, nil); err != nil {
		return fmt.Errorf("settle %s: send again %v: %w", run.ID, keys, err)
	}
	return nil
}

// ShardParams are the inputs of SettleShard.
type ShardParams struct {
	Ledger ledger.Store
	Def    baton.Job
	Run    ledger.Run // as read: SettleShard acts only on a run fanned out
	// Item is the item that just ended: SettleShard settles its shard.
	Item string
	// Items are more items that just ended, of the same run (and of Page,
	// for a run of pages): a consumer that ended several items of a batch
	// settles their shards in one call, each distinct shard once.
	Items []string
	// Page is the stored page that holds Item, for a job whose items are
	// computed when its run opens (baton.Job.Items): the page is the
	// shard. nil for other jobs; with such a job, nil settles nothing
	// (the coordinator's Settle does).
	Page *ledger.Page
	// Refresh, optional, reads the run again. With it, SettleShard also
	// settles a catalog run that Run shows still fanning out (a record
	// cached before its coordinator marked it fanned out): it checks the
	// ended items' shards as the job's catalog cuts them, and reads the run
	// again only when one is complete, settling it if the run is fanned
	// out by then; and a run of pages read fanning out whose shard is
	// complete is read again to climb to its finish. So a consumer reads
	// the run once per complete shard, not once per batch. Without it a
	// catalog run read fanning out settles nothing here.
	Refresh func(context.Context) (ledger.Run, error)
	Now     time.Time
}

// SettleShard settles the shard of the item that just ended (and those
// of Items, each distinct shard once), with work bounded whatever the
// run's size. It first reads the shard's probe: ProbeItems consecutive
// names of the shard, one small ListItemRange; its last ones in
// byte-wise order (items are fanned out in their job's order, mostly the
// names' order, so these are mostly the last to end), or, once this
// process has listed the shard in flight, those of the list's names in
// flight (see probeWindows). While one of the probe's items is in flight
// or not yet claimed, so is the shard, and nothing more is read (that
// item's own end settles the shard later). Otherwise (or when the
// shard's last name is one of the items that ended, which mostly ends it)
// it lists the shard's items (at most about ShardItems), and when every
// one is terminal writes the shard's settle mark (ledger.Store.MarkDone),
// then climbs the run's settle tree:
// when the mark completes its group of ledger.MarkGroup marks, the group's
// mark is written one level up, and so on; the single node of the top
// level finishes the run with the counts summed up the tree. A run of one
// shard finishes at once, without a mark.
//
// Every step is idempotent and is taken again by whoever comes next: a
// mark found written already is climbed from as if just written, so a
// crash between any two writes is recovered by a redelivered message of
// the shard (its consumer settles again) or by the coordinator's Settle.
// The last item of a run, whoever ends it, sees its shard complete (its
// reads follow its own write and every other item's: the probe's items
// are terminal, and so is every item of the list), and the last shard's
// marker sees every group complete: a run settles when its last item
// ends.
//
// A run opened by an earlier version (Shards 0) settles here only when it
// holds at most LegacySettleMax items. SettleShard returns the run as it
// is after the call.
func SettleShard(ctx context.Context, p ShardParams) (ledger.Run, error) {
	run := p.Run
	l := newLayout(p.Def, run)
	fanning := run.State == ledger.RunFanningOut && (l.pages || p.Refresh != nil)
	if run.State != ledger.RunFannedOut && !fanning {
		return run, nil
	}
	ended := append([]string{p.Item}, p.Items...)
	if l.pages {
		// A run still fanning out has as many pages as it has stored so
		// far, more than the record read says, maybe (a cached one).
		if p.Page == nil || p.Page.Run != run.ID || (run.State != ledger.RunFanningOut && p.Page.Index >= l.shards) {
			return run, nil
		}
		if !slices.ContainsFunc(ended, func(n string) bool { _, ok := p.Page.Find(n); return ok }) {
			return run, nil // not an item of the page
		}
		got, complete, err := l.settleShard(ctx, p.Ledger, run, p.Page.Index, p.Page, shardProbe{ended: ended}, p.Now)
		if err != nil || !complete || got.State != ledger.RunFanningOut || p.Refresh == nil {
			return got, err
		}
		// The shard is complete and the run was read still fanning out:
		// the fan-out may have ended since (the record was cached), and
		// then the shard climbs to the run's finish, which a run of pages
		// read fanning out never does.
		fresh, err := p.Refresh(ctx)
		if err != nil || fresh.ID != run.ID || fresh.State != ledger.RunFannedOut {
			return got, err
		}
		l = newLayout(p.Def, fresh)
		if p.Page.Index >= l.shards {
			return fresh, nil
		}
		got, _, err = l.settleShard(ctx, p.Ledger, fresh, p.Page.Index, p.Page, shardProbe{}, p.Now)
		return got, err
	}
	if run.State == ledger.RunFanningOut {
		// A catalog run read fanning out (a record cached before its
		// coordinator marked it fanned out): its Total is not set yet, so
		// its shards are those of the catalog the job has now, which are
		// the run's unless the catalog changed since it opened. Only a
		// shard found complete reads the run again, and only a run fanned
		// out by then settles.
		guess := run
		guess.Total = len(p.Def.Assets)
		if done, err := newLayout(p.Def, guess).anyComplete(ctx, p.Ledger, guess, ended); err != nil || !done {
			return run, err
		}
		fresh, err := p.Refresh(ctx)
		if err != nil || fresh.ID != run.ID || fresh.State != ledger.RunFannedOut {
			return run, err // still fanning out: its coordinator settles it after the fan-out
		}
		run, l = fresh, newLayout(p.Def, fresh)
	}
	if run.Shards == 0 && len(l.names) > LegacySettleMax {
		return run, nil
	}
	var shards []int
	for _, n := range ended {
		if s, ok := l.shardOf(n); ok && !slices.Contains(shards, s) {
			shards = append(shards, s) // an item not of the run settles nothing
		}
	}
	slices.Sort(shards)
	probe := shardProbe{ended: ended}
	store := l.prefetch(ctx, p.Ledger, run, shards, probe)
	for _, s := range shards {
		var err error
		if run, _, err = l.settleShard(ctx, store, run, s, nil, probe, p.Now); err != nil || run.State.Finished() {
			return run, err
		}
	}
	return run, nil
}

// anyComplete reports whether a shard of the ended items is complete,
// reading as settleShard does and writing nothing.
func (l layout) anyComplete(ctx context.Context, store ledger.Store, run ledger.Run, ended []string) (bool, error) {
	var seen []int
	for _, n := range ended {
		s, ok := l.shardOf(n)
		if !ok || slices.Contains(seen, s) {
			continue
		}
		seen = append(seen, s)
		if _, done, err := l.settleShard(ctx, store, run, s, nil, shardProbe{ended: ended, checkOnly: true}, time.Time{}); err != nil || done {
			return done, err
		}
	}
	return false, nil
}

// ProbeItems is the number of names of a shard's probe (see SettleShard).
const ProbeItems = 8

// shardProbe says whether settleShard reads the shard's probe first (see
// SettleShard), and which items just ended: when the shard's last name is
// one of them, the probe is skipped.
type shardProbe struct {
	ended []string // nil: no probe, list the shard at once
	// checkOnly: settleShard only says whether the shard is complete, and
	// writes nothing.
	checkOnly bool
	// orphan, when set, is called with each item of a shard in flight
	// (Settle's: it collects the orphaned ones to send them again).
	orphan func(ledger.Item)
}

// layout is how a run's items fall into shards: the run's item names (the
// first Total assets of the job, then its derived items) in byte-wise
// order, cut into shards consecutive ranges of size names each (the last
// may be shorter or empty). The order is the ledger's asset order, so a
// shard is one ListItemRange.
//
// A run whose store spreads its items over partitions (Run.Partitions
// above 1) is cut within partitions instead: the names of each partition
// (ledger.ItemPartition), in byte-wise order, make shards of at most
// ShardItems names each, partition 0's first. Every shard is then a range
// of one partition, which ListItemRange reads in one bounded read.
//
// For a job whose items are computed when its run opens (pages), the
// shards are the run's stored pages (ledger.Page): Total is the fan-out's
// final position, page×ledger.PageItems + offset, so the run has
// (Total-1)/ledger.PageItems + 1 pages (one, empty, for an empty list);
// a shard's names are its page's, read when needed, never all at once.
// Such a run opens with one shard per page of its expected size
// (baton.Job.ExpectedItems; its final size is not known yet), and a store
// that partitions it does so by page (ledger.PagePartition), so a page is
// one ListItemRange too, whatever the run's Partitions.
type layout struct {
	names  []string
	shards int
	size   int
	// cuts, for a partitioned run, are the shards' bounds in names:
	// shard s is names[cuts[s]:cuts[s+1]] (names sorted by partition,
	// then by name). nil: the plain layout above.
	cuts []int
	// at is, for a partitioned run, the index of each name in names.
	at map[string]int
	// pages: the shards are the run's stored pages (see above).
	pages bool
}

// layoutKey identifies a layout: the job's item lists (by identity: a
// catalog's job shares its slices) and the run's sizes.
type layoutKey struct {
	job                       string
	assets                    *string
	derived                   *baton.Derived
	nAssets, nDerived         int
	total, shards, partitions int
}

// layouts keeps the layouts of the runs a process settles: building one
// sorts the run's names, which a settle per item must not repeat (it
// would cost O(n log n) per item). A few runs are settled at a time, so
// the cache is emptied when it grows past layoutsMax.
var layouts struct {
	sync.Mutex
	m map[layoutKey]layout
}

const layoutsMax = 16

func newLayout(j baton.Job, run ledger.Run) layout {
	// A run of pages needs no names: nothing to build or keep.
	if jobspec.RunTime(j) || run.ID.Submitted() {
		return layout{pages: true, shards: max(1, (run.Total+ledger.PageItems-1)/ledger.PageItems)}
	}
	var first *string
	if len(j.Assets) > 0 {
		first = &j.Assets[0]
	}
	var firstDerived *baton.Derived
	if len(j.Derived) > 0 {
		firstDerived = &j.Derived[0]
	}
	k := layoutKey{j.Name, first, firstDerived, len(j.Assets), len(j.Derived), run.Total, run.Shards, run.Partitions}
	// Built under the lock: the consumers that end a run's first items
	// together would otherwise each build it (a sorted copy of the run's
	// names each), and memory would grow with the concurrency times the
	// run's size.
	layouts.Lock()
	defer layouts.Unlock()
	if l, ok := layouts.m[k]; ok {
		return l
	}
	l := buildLayout(j, run)
	if layouts.m == nil || len(layouts.m) >= layoutsMax {
		layouts.m = make(map[layoutKey]layout)
	}
	layouts.m[k] = l
	return l
}

// buildLayout computes the layout of run (see layout).
func buildLayout(j baton.Job, run ledger.Run) layout {
	names := runNames(j, run)
	if run.Partitions > 1 {
		return partitioned(names, run.Partitions)
	}
	slices.Sort(names)
	shards := max(run.Shards, 1)
	return layout{names: names, shards: shards, size: max(1, (len(names)+shards-1)/shards)}
}

// partitioned returns the layout of names over parts partitions.
func partitioned(names []string, parts int) layout {
	part := make(map[string]int, len(names))
	for _, n := range names {
		part[n] = ledger.ItemPartition(n, parts)
	}
	slices.SortFunc(names, func(a, b string) int {
		if pa, pb := part[a], part[b]; pa != pb {
			return pa - pb
		}
		return strings.Compare(a, b)
	})
	l := layout{names: names, cuts: []int{0}, at: make(map[string]int, len(names))}
	for i, n := range names {
		l.at[n] = i
		if i > 0 && (part[n] != part[names[i-1]] || i-l.cuts[len(l.cuts)-1] == ShardItems) {
			l.cuts = append(l.cuts, i)
		}
	}
	l.cuts = append(l.cuts, len(names))
	l.shards = max(1, len(l.cuts)-1)
	return l
}

// runNames returns the names of run's items: the first run.Total assets
// of the job (the assets it had when it was fanned out), then its derived
// items.
func runNames(j baton.Job, run ledger.Run) []string {
	return slices.Delete(jobspec.ItemNames(j), min(run.Total, len(j.Assets)), len(j.Assets))
}

// shard returns the names of shard s.
func (l layout) shard(s int) []string {
	if l.cuts != nil {
		if s+1 >= len(l.cuts) {
			return nil
		}
		return l.names[l.cuts[s]:l.cuts[s+1]]
	}
	lo := min(s*l.size, len(l.names))
	return l.names[lo:min(lo+l.size, len(l.names))]
}

// shardOf returns the shard of the item called name.
func (l layout) shardOf(name string) (int, bool) {
	if l.cuts != nil {
		i, found := l.at[name]
		if !found {
			return 0, false
		}
		s, _ := slices.BinarySearch(l.cuts, i+1)
		return s - 1, true
	}
	i, found := slices.BinarySearch(l.names, name)
	return i / l.size, found
}

// fanInItems lists, shard by shard, the records the fan-in check needs:
// the derived items and their inputs.
func (l layout) fanInItems(ctx context.Context, store ledger.Store, id ledger.RunID, j baton.Job) ([]ledger.Item, error) {
	need := make(map[string]bool)
	for _, d := range j.Derived {
		need[d.Name] = true
		for _, in := range d.Inputs {
			need[in] = true
		}
	}
	var out []ledger.Item
	for s := range l.shards {
		names := l.shard(s)
		if !slices.ContainsFunc(names, func(n string) bool { return need[n] }) {
			continue
		}
		items, err := store.ListItemRange(ctx, id, names[0], names[len(names)-1])
		if err != nil {
			return nil, fmt.Errorf("list shard %d: %w", s, err)
		}
		for _, it := range items {
			if need[it.Key.Asset] {
				out = append(out, it)
			}
		}
	}
	if out == nil {
		out = []ledger.Item{}
	}
	return out, nil
}

// counts are the item counts under a node of the settle tree.
type counts struct{ succeeded, dead, cancelled int }

func (c *counts) add(o counts) {
	c.succeeded += o.succeeded
	c.dead += o.dead
	c.cancelled += o.cancelled
}

// settleShard settles shard s of run (see SettleShard); page is shard s's
// page when the caller has it (pages only); complete says whether every
// item of the shard is terminal (false when the probe found it in
// flight too).
func (l layout) settleShard(ctx context.Context, store ledger.Store, run ledger.Run, s int, page *ledger.Page, probe shardProbe, now time.Time) (_ ledger.Run, complete bool, _ error) {
	var names []string
	if l.pages {
		if page == nil {
			pg, err := store.GetPage(ctx, run.ID, s)
			if err != nil {
				return run, false, fmt.Errorf("settle %s shard %d: %w", run.ID, s, err)
			}
			page = &pg
		}
		names = page.Names()
	} else {
		names = l.shard(s)
	}
	wk := windowKey{run.ID.String(), s}
	if probe.ended != nil && len(names) > ProbeItems && !slices.Contains(probe.ended, names[len(names)-1]) {
		at := probeWindow(wk, len(names))
		ended, err := allEnded(ctx, store, run.ID, names[at:at+ProbeItems])
		if err != nil {
			return run, false, fmt.Errorf("settle %s shard %d: probe: %w", run.ID, s, err)
		}
		if !ended {
			return run, false, nil // in flight
		}
	}
	var items []ledger.Item
	if len(names) > 0 {
		var err error
		if items, err = store.ListItemRange(ctx, run.ID, names[0], names[len(names)-1]); err != nil {
			return run, false, fmt.Errorf("settle %s shard %d: %w", run.ID, s, err)
		}
	}
	c, done := shardCounts(names, items)
	if !done {
		keepWindow(wk, names, items)
		if probe.orphan != nil {
			for _, it := range items {
				probe.orphan(it)
			}
		}
		return run, false, nil // in flight
	}
	if probe.checkOnly {
		return run, true, nil
	}
	dropWindow(wk)
	// Climb: node (level, index) is done with counts c; n nodes at level.
	// A run-time list still fanning out has a number of pages not known
	// yet: its shards are marked as they end, and only full groups climb,
	// never to the run's finish (the pages, written once, are the shards
	// whatever comes after them), so that the shards that end during a
	// long fan-out are counted when the last ones end.
	open := l.pages && run.State == ledger.RunFanningOut
	level, index, n := 0, s, l.shards
	if open {
		n = math.MaxInt32
	}
	for n > 1 {
		if open && level > 0 && n < ledger.MarkGroup {
			return run, true, nil // the top levels wait for the fan-out's end
		}
		_, err := store.MarkDone(ctx, ledger.MarkParams{Run: run.ID, Level: level, Index: index,
			Succeeded: c.succeeded, Dead: c.dead, Cancelled: c.cancelled, Now: now})
		if err != nil && !errors.Is(err, ledger.ErrTerminal) {
			return run, true, fmt.Errorf("settle %s: %w", run.ID, err)
		}
		group := index / ledger.MarkGroup
		marks, err := store.ListMarks(ctx, run.ID, level, group)
		if err != nil {
			return run, true, fmt.Errorf("settle %s: %w", run.ID, err)
		}
		if len(marks) < min(ledger.MarkGroup, n-group*ledger.MarkGroup) {
			return run, true, nil // other nodes of the group in flight
		}
		c = counts{}
		for _, m := range marks {
			c.add(counts{m.Succeeded, m.Dead, m.Cancelled})
		}
		level, index, n = level+1, group, (n+ledger.MarkGroup-1)/ledger.MarkGroup
	}
	if open {
		return run, true, nil
	}
	fin, err := store.FinishRun(ctx, ledger.FinishRunParams{ID: run.ID, Succeeded: c.succeeded, Dead: c.dead, Cancelled: c.cancelled, Now: now})
	if errors.Is(err, ledger.ErrTerminal) {
		return fin, true, nil // settled by someone else meanwhile
	}
	if err != nil {
		return run, true, fmt.Errorf("settle %s: finish: %w", run.ID, err)
	}
	return fin, true, nil
}

// windowKey identifies a shard of a run in probeWindows.
type windowKey struct {
	run   string
	shard int
}

// probeWindows keeps, for the shards this process listed in flight, where
// their probe lies: the ProbeItems consecutive names of the shard that
// held the most items in flight at that list (an offset in the shard's
// names). A shard not listed yet is probed at its tail, the names fanned
// out last when items go out in name order; when they do not (a queue
// that delivers out of order, items expanded from shard messages), the
// tail can end early and every settle would list the shard, which the
// window of the names seen in flight avoids. Any ProbeItems names of the
// shard make a correct probe (when one of them is in flight, so is the
// shard), so a window out of date costs a list, never a settle. It is
// emptied when it grows past probeWindowsMax.
var probeWindows struct {
	sync.Mutex
	m map[windowKey]int
}

const probeWindowsMax = 4096

// probeWindow returns the offset of the probe of shard k, of n names.
func probeWindow(k windowKey, n int) int {
	probeWindows.Lock()
	defer probeWindows.Unlock()
	if at, ok := probeWindows.m[k]; ok && at+ProbeItems <= n {
		return at
	}
	return n - ProbeItems
}

// keepWindow records the probe of shard k, whose names are in flight in
// items (a list of the shard): the window of ProbeItems names with the
// most of them in flight or not claimed yet, the last one among equals.
func keepWindow(k windowKey, names []string, items []ledger.Item) {
	if len(names) <= ProbeItems {
		return
	}
	ended := make(map[string]bool, len(items))
	for _, it := range items {
		ended[it.Key.Asset] = it.State.Terminal()
	}
	best, bestAt, in := -1, 0, 0
	for i, n := range names {
		if !ended[n] {
			in++
		}
		if i >= ProbeItems && !ended[names[i-ProbeItems]] {
			in--
		}
		if i >= ProbeItems-1 && in >= best {
			best, bestAt = in, i-ProbeItems+1
		}
	}
	probeWindows.Lock()
	defer probeWindows.Unlock()
	if probeWindows.m == nil || len(probeWindows.m) >= probeWindowsMax {
		probeWindows.m = make(map[windowKey]int)
	}
	probeWindows.m[k] = bestAt
}

// dropWindow forgets the probe of shard k, which has ended.
func dropWindow(k windowKey) {
	probeWindows.Lock()
	defer probeWindows.Unlock()
	delete(probeWindows.m, k)
}

// allEnded reads whether every item called one of names, consecutive
// names of a shard, is terminal: one ListItemRange.
func allEnded(ctx context.Context, store ledger.Store, id ledger.RunID, names []string) (bool, error) {
	items, err := store.ListItemRange(ctx, id, names[0], names[len(names)-1])
	if err != nil {
		return false, err
	}
	_, done := shardCounts(names, items)
	return done, nil
}

// shardCounts decides whether every item called one of names is terminal
// in items, and counts them by state.
func shardCounts(names []string, items []ledger.Item) (counts, bool) {
	states := make(map[string]ledger.ItemState, len(items))
	for _, it := range items {
		states[it.Key.Asset] = it.State
	}
	var c counts
	for _, n := range names {
		switch states[n] {
		case ledger.ItemSucceeded:
			c.succeeded++
		case ledger.ItemDead:
			c.dead++
		case ledger.ItemCancelled:
			c.cancelled++
		default:
			return c, false
		}
	}
	return c, true
}
