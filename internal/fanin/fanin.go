// Package fanin decides, for one run, what becomes of its derived items:
// enqueue one once every input SUCCEEDED, cancel one once an input is DEAD
// or CANCELLED, leave it otherwise.
//
// The check reads the items it judges (one strongly consistent list of a
// small run, or chunks of at most a shard's names of a large one:
// ReadItems) and acts on what it finds; it holds no state and may run any number of times, from
// any process: enqueueing a derived item twice is harmless (its claim
// dedupes), and cancelling an item already terminal changes nothing
// (terminal is terminal). That is what closes the crash window between an
// input's completion and the derived enqueue (invariant 6): whoever next
// sees the input SUCCEEDED, a redelivered input message or a settle, runs
// the check again.
//
// # Settling
//
// A run settles when its last item ends, whoever ends it, at any size
// (invariant 11), with work and memory bounded per call (invariant 12).
// Its items fall into Run.Shards shards fixed when it opens (Shards:
// ShardItems items each): consecutive ranges of the run's item names in
// byte-wise order, so a shard is one ledger.Store.ListItemRange. The
// consumer that ends an item settles its shard (SettleShard): it reads
// the shard's probe, ProbeItems of its names (its last ones, or those a
// list found in flight), and lists the shard only once those have ended
// (a consumer settles the shards of a batch's items once the batch is
// done, each shard once); a shard whose items are all terminal gets a
// write-once settle mark with its counts (ledger.Store.MarkDone), and
// ledger.MarkGroup marks of one level make one mark of the level above,
// up to a level of one group, whose completion finishes the run with the
// counts summed up the tree. Every step is idempotent and is retaken by
// whoever comes next (a mark found written is climbed from), so a crash
// anywhere is recovered by a redelivered message or by the coordinator's
// Settle, which settles every shard, one at a time. A run of one shard
// finishes without a mark.
package fanin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/telemetry"
)

// Params are the inputs of Check.
type Params struct {
	Ledger ledger.Store
	// Queue receives the derived items found ready. nil: nothing is
	// enqueued (Check only cancels).
	Queue queue.Sender
	Def   baton.Job
	Run   ledger.RunID
	// Partitions is the run's ledger.Run.Partitions (0 when unknown: the
	// run is read as one partition).
	Partitions int
	// Fence goes into the derived items' messages: the fence carried by the
	// input message that triggered the check.
	Fence int64
	// Input restricts the check to the derived items downstream of this
	// item (an asset or a derived item: Job.Downstream); "": every derived
	// item of Def.
	Input string
	// Items are the run's items when the caller has just listed them; nil:
	// Check lists them.
	Items []ledger.Item
	// Resend: a derived item found orphaned (see Orphaned) is enqueued
	// again (see SettleParams.Resend).
	Resend bool
	Now    time.Time
}

// Result says what Check did, by derived item name.
type Result struct {
	Enqueued  []string
	Cancelled []string // includes items found cancelled by someone else meanwhile
	Waiting   []string // some input not terminal yet
	Done      []string // already terminal before the check
}

// Check runs the fan-in check for p.Run, over the derived items in
// dependency order (Job.DerivedOrder). A derived item without a record
// is enqueued when all its inputs SUCCEEDED (one with a record, RUNNING or
// FAILED, was claimed from a message that is still redelivered until it
// ends: enqueueing another copy would only add a duplicate; with Resend,
// unless it is RUNNING under a claim that ended an item lease ago or more,
// whose messages may be lost: see Orphaned), and a derived
// item that is not terminal is cancelled with
// the reason "input X is DEAD" (or CANCELLED) when one of its inputs ended
// without success; the items downstream of it are then cancelled in the
// same pass (their input is now CANCELLED), to any depth. It returns the first store or queue error, wrapped with
// the item it concerns; what it did before the error stands.
func Check(ctx context.Context, p Params) (Result, error) {
	var res Result
	// Dependency order: an item cancelled here dooms its own dependents
	// further down the list, in the same pass.
	derived := jobspec.DerivedOrder(p.Def)
	if p.Input != "" {
		derived = jobspec.Downstream(p.Def, p.Input)
	}
	if len(derived) == 0 {
		return res, nil
	}
	items := p.Items
	if items == nil {
		need := make([]string, 0, len(derived))
		for _, d := range derived {
			need = append(need, d.Name)
			need = append(need, d.Inputs...)
		}
		var err error
		if items, err = ReadItems(ctx, p.Ledger, p.Def, p.Run, p.Partitions, need); err != nil {
			return res, fmt.Errorf("fan-in %s: %w", p.Run, err)
		}
	}
	states := make(map[string]ledger.ItemState, len(items))
	claims := map[string]ledger.Item{}
	for _, it := range items {
		states[it.Key.Asset] = it.State
		if it.State == ledger.ItemRunning {
			claims[it.Key.Asset] = it
		}
	}

	var ready []queue.Message
	var readyNames []string
	for _, d := range derived {
		if states[d.Name].Terminal() {
			res.Done = append(res.Done, d.Name)
			continue
		}
		verdict, reason := Inputs(d, states)
		switch verdict {
		case Ready:
			if states[d.Name] != "" && !(p.Resend && Orphaned(claims[d.Name], p.Def, p.Now)) { // claimed already: its own message drives it
				res.Waiting = append(res.Waiting, d.Name)
				continue
			}
			key := ledger.ItemKey{Run: p.Run, Asset: d.Name}
			ready = append(ready, message.New(key, p.Fence, true).QueueMessage())
			readyNames = append(readyNames, d.Name)
		case Doomed:
			key := ledger.ItemKey{Run: p.Run, Asset: d.Name}
			it, err := p.Ledger.Cancel(ctx, ledger.CancelParams{Key: key, Reason: reason, Now: p.Now})
			if err != nil && !errors.Is(err, ledger.ErrTerminal) {
				return res, fmt.Errorf("fan-in: cancel %s: %w", key, err)
			}
			// What it is now (CANCELLED, or what someone else ended it
			// as) decides its dependents below.
			states[d.Name] = it.State
			if it.State == "" {
				states[d.Name] = ledger.ItemCancelled
			}
			res.Cancelled = append(res.Cancelled, d.Name)
		default:
			res.Waiting = append(res.Waiting, d.Name)
		}
	}
	if len(ready) > 0 && p.Queue != nil {
		// The derived items' messages carry the span of the item whose
		// end made them ready (the consumer's origin).
		telemetry.Stamp(ctx, ready)
		if _, err := queue.SendAll(ctx, p.Queue, ready, nil); err != nil {
			return res, fmt.Errorf("fan-in %s: enqueue %v: %w", p.Run, readyNames, err)
		}
		res.Enqueued = readyNames
	}
	return res, nil
}

// Orphaned reports whether it, an item's record, is RUNNING under a claim
// that ended at least one more item lease ago: a live message of it would
// have been redelivered and claimed it again by then, so its messages may
// all be lost (a queue's redrive moves a message to its dead-letter queue,
// with no reason, when its consumers die at its last receives). Check
// (a derived item) and Settle (any other) send it again; a duplicate of a
// live message is harmless (its claim dedupes).
func Orphaned(it ledger.Item, j baton.Job, now time.Time) bool {
	if it.State != ledger.ItemRunning || now.IsZero() {
		return false
	}
	return !now.Before(it.LeaseUntil.Add(j.Limits.ClockSkew + jobspec.ItemLease(j, it.Key.Asset)))
}

// ReadItems returns the records of the run's items called names (those
// that exist), reading no more than it needs whatever the run's size: the
// whole run in one list when the job has at most ShardItems items; else
// names in chunks, each of names no further apart than ShardItems items
// of the job in asset order, one record read by itself and a chunk of
// more by one ListItemRange, so that no read returns more than about
// ShardItems records. For a run of parts item partitions (above 1,
// ledger.Run.Partitions) the chunks are cut within partitions, each read
// by a ListItemRange of its partition.
func ReadItems(ctx context.Context, store ledger.Store, j baton.Job, run ledger.RunID, parts int, names []string) ([]ledger.Item, error) {
	if len(j.Assets)+len(j.Derived) <= ShardItems {
		items, err := store.ListItems(ctx, run)
		if err != nil {
			return nil, fmt.Errorf("list items: %w", err)
		}
		return items, nil
	}
	all := jobspec.ItemNames(j)
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	if parts > 1 {
		// The names of each partition, chunked among that partition's
		// names of the job.
		out := make([]ledger.Item, 0, len(names))
		byPart := make(map[int][]string)
		for _, n := range names {
			pt := ledger.ItemPartition(n, parts)
			byPart[pt] = append(byPart[pt], n)
		}
		allOf := make(map[int][]string, len(byPart))
		for _, n := range all {
			if pt := ledger.ItemPartition(n, parts); byPart[pt] != nil {
				allOf[pt] = append(allOf[pt], n)
			}
		}
		for _, pt := range slices.Sorted(maps.Keys(byPart)) {
			items, err := readChunks(ctx, store, run, allOf[pt], byPart[pt])
			if err != nil {
				return nil, err
			}
			out = append(out, items...)
		}
		return out, nil
	}
	return readChunks(ctx, store, run, all, names)
}

// readChunks reads the records of names (sorted, distinct) among all (the
// names of the job in one partition), in chunks no further apart than
// ShardItems names of all (see ReadItems).
func readChunks(ctx context.Context, store ledger.Store, run ledger.RunID, all, names []string) ([]ledger.Item, error) {
	all = slices.Sorted(slices.Values(all))
	out := make([]ledger.Item, 0, len(names))
	read := func(chunk []string) error {
		if len(chunk) == 1 {
			it, err := store.GetItem(ctx, ledger.ItemKey{Run: run, Asset: chunk[0]})
			switch {
			case errors.Is(err, ledger.ErrNotFound):
			case err != nil:
				return fmt.Errorf("read item %s: %w", chunk[0], err)
			default:
				out = append(out, it)
			}
			return nil
		}
		items, err := store.ListItemRange(ctx, run, chunk[0], chunk[len(chunk)-1])
		if err != nil {
			return fmt.Errorf("list items %s to %s: %w", chunk[0], chunk[len(chunk)-1], err)
		}
		for _, it := range items {
			if _, ok := slices.BinarySearch(chunk, it.Key.Asset); ok {
				out = append(out, it)
			}
		}
		return nil
	}
	start, startRank := 0, 0
	for i, n := range names {
		rank, _ := slices.BinarySearch(all, n)
		if i == 0 {
			startRank = rank
			continue
		}
		if rank-startRank >= ShardItems {
			if err := read(names[start:i]); err != nil {
				return nil, err
			}
			start, startRank = i, rank
		}
	}
	if len(names) > 0 {
		if err := read(names[start:]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Verdict is what a derived item's inputs allow.
type Verdict int

const (
	Waiting Verdict = iota // some input is not terminal (or absent)
	Ready                  // every input SUCCEEDED
	Doomed                 // some input is DEAD or CANCELLED
)

// Inputs judges d's inputs from the states of the run's items, by asset
// (an absent asset has the zero state). For Doomed it also returns the
// cancel reason, naming the first input that ended without success.
func Inputs(d baton.Derived, states map[string]ledger.ItemState) (Verdict, string) {
	verdict := Ready
	for _, in := range d.Inputs {
		switch s := states[in]; s {
		case ledger.ItemSucceeded:
		case ledger.ItemDead, ledger.ItemCancelled:
			return Doomed, fmt.Sprintf("input %s is %s", in, s)
		default:
			verdict = Waiting
		}
	}
	return verdict, ""
}
