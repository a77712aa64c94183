// Package ledger is the port for the durable state of runs and items.
//
// A run is the execution of one tick (job, nominal time). One record per
// tick holds its current generation: generation 1 is the scheduled run, a
// forced replay opens generation 2, 3, … in the same record. An item is
// (run, asset); its record is keyed by the item's idempotency key, which
// includes the generation, so items of different generations never meet.
//
// Every method is one conditional write on one record (or one read): no
// method spans records, so every adapter can implement it without
// multi-record transactions. Time is always an input (Now), compared with
// absolute times stored in the records.
//
// # Shards and settle marks
//
// A run's items are split into Run.Shards shards, a count fixed when the
// generation opens (OpenRunParams.Shards) and stored with the run. A shard
// is a range of asset names (ListItemRange reads one in asset order), so
// whoever ends an item reads its shard only, a bounded number of records
// whatever the run's size. When every item of a shard is terminal, a
// settle mark records it: one write-once record per shard (level 0). Marks
// form a tree: MarkGroup consecutive marks of a level make one mark of the
// level above, until a level has a single group, whose completion
// finishes the run. A mark is written once, and an adapter may keep one
// group's marks together (at most MarkGroup records), so no record or
// partition takes writes that grow with the run (invariant 12). Which asset
// falls in which shard, and the tree's walk, are the core's (package
// fanin); the store only keeps the records.
//
// Compatibility: runs opened by earlier versions read Shards 0; they have
// no marks and settle as one shard.
//
// # Item partitions
//
// A store may spread a large run's item records over several places
// (DynamoDB partition keys, which serve about 1,000 write units per
// second each): Run.Partitions, fixed by the store when the generation
// opens and 0 or 1 when it keeps every item of the run in one place.
// The item called asset lives in partition ItemPartition(asset,
// Partitions), a function of the name alone, so that a store finds an
// item's record from its key. The core cuts the shards of a partitioned
// run within partitions (every name of a shard is in one partition), and
// ListItemRange of a partitioned run reads the partition of its first
// name only: one bounded read per shard, whatever the run's size.
//
// A run whose items are its stored pages (see "Item pages"; opened with
// OpenRunParams.Pages) is partitioned by page instead, when the store
// partitions it: every item of page i lives in partition
// PagePartition(i, Partitions), so that a page, a shard of the run, is
// one bounded read, and consecutive pages, which consumers work on at
// the same time, are in different places. Its Shards, given at open
// from the expected size of the list (baton.Job.ExpectedItems, or a
// submission's item count), fix the partition count; a longer list than
// expected wraps around the same partitions. A store finds the page of
// an item called asset from the run's stored pages (their names are in
// order), so an item's record is still found from its key alone.
// Compatibility: runs opened before Pages was kept read Pages false;
// their items were kept in one place (their Shards were 1), and are
// found there.
//
// # Item pages
//
// A run whose items are computed when it opens (baton.Job.Items) keeps
// its item list with the run, in pages: page i of a run holds at most
// PageItems items, in strictly ascending byte-wise order of their names,
// and every name of page i sorts before every name of page i+1. A page
// is written once (Store.PutPage) and never changes, so a resumed fan-out sends
// the same items and a consumer may cache a page for as long as it likes.
// Because the names are ordered, a page is a contiguous range of the
// run's item records (ListItemRange from its first to its last name): the
// pages are the run's shards.
//
// Implementations must pass the conformance suite in
// internal/ledger/ledgertest.
package ledger

import (
	"context"
	"errors"
	"hash/fnv"
	"time"
)

// Sentinel errors. Adapters translate backend errors into these; callers
// test with errors.Is. Where a method documents that it returns the current
// record along with one of these errors, the record is the one that made
// the condition fail.
var (
	// ErrNotFound: no such run or item.
	ErrNotFound = errors.New("not found")
	// ErrHeld: the item is RUNNING under another owner whose lease is live.
	ErrHeld = errors.New("item held by a live owner")
	// ErrTerminal: the item is SUCCEEDED, DEAD or CANCELLED (or the run is
	// complete or partial); terminal records are never overwritten.
	ErrTerminal = errors.New("already terminal")
	// ErrConflict: the caller's owner, attempt, fence, generation or
	// expected state do not match the record.
	ErrConflict = errors.New("conflicting state")
)

// RunState is the state of a run.
type RunState string

const (
	RunFanningOut RunState = "fanning_out" // messages being enqueued; Cursor says how far
	RunFannedOut  RunState = "fanned_out"  // every catalog asset enqueued; Total is set
	RunComplete   RunState = "complete"    // every item SUCCEEDED (terminal)
	RunPartial    RunState = "partial"     // every item terminal, some DEAD or CANCELLED (terminal)
)

// Finished reports whether s is terminal.
func (s RunState) Finished() bool { return s == RunComplete || s == RunPartial }

// ItemState is the state of an item.
type ItemState string

const (
	ItemRunning   ItemState = "RUNNING"
	ItemSucceeded ItemState = "SUCCEEDED" // terminal
	ItemFailed    ItemState = "FAILED"
	ItemDead      ItemState = "DEAD"      // terminal
	ItemCancelled ItemState = "CANCELLED" // terminal
)

// Terminal reports whether s is SUCCEEDED, DEAD or CANCELLED.
func (s ItemState) Terminal() bool {
	return s == ItemSucceeded || s == ItemDead || s == ItemCancelled
}

// Run is the record of one tick's current generation.
type Run struct {
	ID     RunID
	State  RunState
	Cursor int   // catalog entries enqueued so far (fanning_out)
	Total  int   // catalog entries enqueued in all (set by fanned_out)
	Fence  int64 // fence of the latest coordinator that opened or advanced it
	// OpenFence is the fence of the coordinator that opened this
	// generation: every message of the generation carries a fence in
	// [OpenFence, Fence]. 0 for records written before it was kept (no
	// lower bound is known for them).
	OpenFence int64
	// Shards is the number of item shards of this generation, fixed
	// when it opened (see the package doc). 0 for records written before
	// it was kept: such a run settles as one shard.
	Shards int
	// Partitions is the number of places the store spreads this
	// generation's item records over (see the package doc), set by the
	// store when the generation opens; 0 or 1: one.
	Partitions int
	// Pages: the generation was opened with OpenRunParams.Pages and its
	// items are partitioned by page (meaningful when Partitions is above
	// 1; false on stores that keep a run's items in one place).
	Pages bool
	// Digest is the OpenRunParams.Digest of the write that opened this
	// generation: a submission's item list (DigestItems). "" when none
	// was given, and for records written before it was kept (not known).
	Digest string
	// TraceID is the OpenRunParams.TraceID of the write that opened this
	// generation: the trace of the coordinator's span that opened it,
	// which its items' spans link to. "" when it was not traced, and for
	// records written before it was kept (not known).
	TraceID    string
	OpenedAt   time.Time
	UpdatedAt  time.Time
	FinishedAt time.Time // zero until complete or partial
	// Counts per item state, set when the run is finished.
	Succeeded, Dead, Cancelled int
}

// Item is the record of one (run, asset).
type Item struct {
	Key        ItemKey
	State      ItemState
	Owner      string    // owner of the latest claim
	Attempt    int       // incremented by every successful claim
	LeaseUntil time.Time // RUNNING only: claimable by another owner once LeaseUntil+skew <= now
	Fence      int64     // fence carried by the message of the latest claim
	Error      string    // last failure reason (FAILED, DEAD) or cancel reason
	Result     []byte    // processor result (SUCCEEDED)
	CreatedAt  time.Time // first claim (or cancel)
	StartedAt  time.Time // latest claim
	FinishedAt time.Time // time it became terminal
	UpdatedAt  time.Time
	// Wait is what the item's next attempt waits for, as the consumer
	// noted it when it handed the item's message back delayed (see
	// WaitNoter); the zero value when none was noted, and in records
	// written before it was kept. Read it with NextAttempt.
	Wait ItemWait
}

// ItemWait is a noted wait of an item (WaitNoter.NoteWait).
type ItemWait struct {
	// At is the earliest time of the next attempt: the message is hidden
	// until then (it may come later, never sooner).
	At time.Time
	// Limit and Key name the rate limit (and its key, for a keyed one;
	// at most baton.MaxLimitKey bytes) the item waits on: its message was
	// given back without an attempt. Limit is "" for a retry delay after
	// a failed attempt.
	Limit, Key string
	// Attempt is the item's Attempt when the wait was noted.
	Attempt int
}

// NextAttempt returns the item's wait while it holds: the item is FAILED
// (or, never claimed, was recorded FAILED at attempt 0 by NoteWait) at
// the attempt the wait was noted at. A later claim, by any version,
// raises Attempt, so a wait noted before it never shows again; a record
// without one (older versions) shows none.
func (it Item) NextAttempt() (ItemWait, bool) {
	if it.State != ItemFailed || it.Wait.At.IsZero() || it.Wait.Attempt != it.Attempt {
		return ItemWait{}, false
	}
	return it.Wait, true
}

// Unattempted reports whether the item was never claimed: a record that
// NoteWait made for an item waiting on a limit (FAILED at attempt 0).
// Operators' counts show it as PENDING, which it is.
func (it Item) Unattempted() bool { return it.State == ItemFailed && it.Attempt == 0 }

// NoteWaitParams are the inputs of WaitNoter.NoteWait.
type NoteWaitParams struct {
	Key ItemKey
	// Wait is the wait to note: its At, and Limit and Key for a limit.
	// Its Attempt is ignored (the stored one is the record's).
	Wait ItemWait
	// Attempt is the attempt the caller failed (a retry delay): the
	// record must be FAILED at it. Ignored with Unclaimed.
	Attempt int
	// Unclaimed: the caller never claimed the item (it waits on a
	// limit): any FAILED record takes the note, and an absent item is
	// recorded FAILED at attempt 0 with it.
	Unclaimed bool
	Now       time.Time
}

// WaitNoter is an optional ability of a Store: noting on an item what
// its next attempt waits for, for operators (status, the dashboard). It
// decides nothing: a claim never reads it.
type WaitNoter interface {
	// NoteWait stores p.Wait (Attempt: the record's) on the item in one
	// conditional write, when the item is FAILED at p.Attempt, or with
	// p.Unclaimed FAILED at any attempt or absent. An absent item is
	// created FAILED at Attempt 0 without an error: its first claim
	// is attempt 1, as from no record. It returns the record after the
	// write; ErrTerminal when the item is terminal, ErrConflict when it
	// is RUNNING or at another attempt, ErrNotFound when absent (without
	// Unclaimed), each with the record where there is one, nothing
	// written.
	NoteWait(ctx context.Context, p NoteWaitParams) (Item, error)
}

// OpenOutcome says what OpenRun did.
type OpenOutcome string

const (
	// Opened: a new run record (generation 1) or a new generation was written.
	Opened OpenOutcome = "opened"
	// Resumed: the tick's run is still fanning out; the caller continues
	// from its Cursor. The record's Fence now is the caller's.
	Resumed OpenOutcome = "resumed"
	// AlreadyFannedOut: the run is fanned out or finished and Force was not
	// set; nothing was written.
	AlreadyFannedOut OpenOutcome = "already_fanned_out"
)

// OpenRunParams are the inputs of Store.OpenRun.
type OpenRunParams struct {
	Job     string
	Nominal time.Time // the tick's nominal time (UTC)
	Fence   int64     // fence of the caller's lease
	// Submission, when set, opens the run of the submission with that
	// dedupe key instead of a tick's: its record is kept under TickOf's
	// (job+"+"+Submission, SubmissionNominal), and Nominal is ignored.
	Submission string
	// Force opens the next generation whatever the current run's state.
	Force bool
	// Shards is the shard count of a generation this call opens (0 means
	// 1); resuming keeps the stored count.
	Shards int
	// Pages says that the run's items are its stored pages (a run-time
	// list or a submission): a store that partitions the generation it
	// opens places the items by page (see "Item partitions"), and keeps
	// that with the run (Run.Pages). Resuming keeps the stored choice.
	Pages bool
	// Digest, optional, names the item list of the generation this call
	// opens (a submission's: ledger.DigestItems), kept with the run
	// (Run.Digest); resuming keeps the stored one. At most 128 bytes.
	Digest string
	// TraceID, optional, is the W3C trace id (32 lower-case hex digits)
	// of the span opening the generation, kept with the run
	// (Run.TraceID); resuming keeps the stored one.
	TraceID string
	Now     time.Time
}

// AdvanceRunParams are the inputs of Store.AdvanceRun.
type AdvanceRunParams struct {
	ID     RunID
	Fence  int64
	Cursor int  // new cursor; must not be below the stored one
	Done   bool // fan-out finished: state becomes fanned_out, Total = Cursor
	Now    time.Time
}

// FinishRunParams are the inputs of Store.FinishRun.
type FinishRunParams struct {
	ID                         RunID
	Succeeded, Dead, Cancelled int
	Now                        time.Time
}

// ListRunsParams are the inputs of Store.ListRuns.
type ListRunsParams struct {
	Job    string
	Before time.Time // only runs with Nominal before this; zero: no bound
	Limit  int       // at most this many; 0 means 20
}

// ItemPartition returns the partition of the item called asset in a run
// of parts partitions: the FNV-1a hash of the name modulo parts (0 when
// parts is below 2). Stores that partition a run's items and the core's
// shard layout both use it, so it never changes for a stored format.
func ItemPartition(asset string, parts int) int {
	if parts < 2 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(asset))
	return int(h.Sum32() % uint32(parts))
}

// PagePartition returns the partition of the items of page index in a
// run partitioned by page over parts partitions (see "Item partitions"):
// index modulo parts (0 when parts is below 2). It never changes for a
// stored format.
func PagePartition(index, parts int) int {
	if parts < 2 || index < 0 {
		return 0
	}
	return index % parts
}

// MarkGroup is the number of consecutive settle marks of one level that
// make one mark of the level above: marks Index i of a level belong to
// group i/MarkGroup, and ListMarks reads one group.
const MarkGroup = 64

// Mark is a settle mark: node (Level, Index) of a run's settle tree has
// ended, with the counts of the items under it. Level 0 is a shard.
type Mark struct {
	Run                        RunID
	Level, Index               int
	Succeeded, Dead, Cancelled int
	At                         time.Time // when it was written
}

// MarkParams are the inputs of Store.MarkDone.
type MarkParams struct {
	Run                        RunID
	Level, Index               int // both at least 0
	Succeeded, Dead, Cancelled int // at least 0
	Now                        time.Time
}

// ClaimParams are the inputs of Store.Claim.
type ClaimParams struct {
	Key        ItemKey
	Owner      string
	LeaseUntil time.Time // absolute expiry of the claim
	Fence      int64     // fence carried by the message
	// MaxAttempts bounds claims: a claimable item whose Attempt already
	// reached MaxAttempts is marked DEAD instead. 0 means no bound.
	MaxAttempts int
	Skew        time.Duration // clock-skew allowance on LeaseUntil
	Now         time.Time
}

// CompleteParams are the inputs of Store.Complete.
type CompleteParams struct {
	Key     ItemKey
	Owner   string
	Attempt int
	Result  []byte
	Now     time.Time
}

// FailParams are the inputs of Store.Fail.
type FailParams struct {
	Key     ItemKey
	Owner   string
	Attempt int
	Reason  string
	// Permanent sends the item to DEAD whatever its attempt count.
	Permanent bool
	// MaxAttempts: a failure at Attempt >= MaxAttempts is DEAD. 0: no bound.
	MaxAttempts int
	Now         time.Time
}

// ReleaseParams are the inputs of Store.Release.
type ReleaseParams struct {
	Key     ItemKey
	Owner   string
	Attempt int
	Now     time.Time
}

// ExtendParams are the inputs of Store.Extend.
type ExtendParams struct {
	Key        ItemKey
	Owner      string
	Attempt    int
	LeaseUntil time.Time // the claim's new absolute expiry
	Now        time.Time
}

// CancelParams are the inputs of Store.Cancel.
type CancelParams struct {
	Key    ItemKey
	Reason string
	Now    time.Time
}

// Store holds runs and items. All methods may be called concurrently, from
// several processes.
type Store interface {
	// OpenRun opens or resumes the run of the tick (Job, Nominal).
	//  - No record: writes generation 1, fanning_out, Cursor 0 → Opened.
	//    Whenever a generation is opened its OpenFence is the caller's
	//    Fence, its Shards the caller's (below 1: 1) and, on a store that
	//    partitions it, Pages the caller's; resuming leaves OpenFence,
	//    Shards, Partitions and Pages as they are.
	//  - fanning_out and not Force: sets Fence if the caller's is higher
	//    → Resumed (ErrConflict if the stored fence is higher: a newer
	//    coordinator owns it).
	//  - fanned_out, complete or partial, not Force → AlreadyFannedOut,
	//    nothing written.
	//  - Force: writes generation+1, fanning_out, Cursor 0 → Opened
	//    (generation 1 if there was no record).
	// Any number of concurrent calls for one tick without Force produce
	// exactly one Opened. The returned Run is the record after the call.
	OpenRun(ctx context.Context, p OpenRunParams) (Run, OpenOutcome, error)

	// AdvanceRun records fan-out progress of a fanning_out run of
	// generation ID.Generation: Cursor, Fence, and with Done the state
	// fanned_out with Total = Cursor. It returns ErrConflict, with the
	// current record, when the generation differs, the run is not
	// fanning_out, the stored fence is higher than Fence, or Cursor is below
	// the stored cursor; ErrNotFound when there is no record.
	AdvanceRun(ctx context.Context, p AdvanceRunParams) (Run, error)

	// FinishRun moves a fanned_out run of generation ID.Generation to
	// complete (Dead+Cancelled == 0) or partial, storing the counts. It
	// returns ErrTerminal, with the record, when it is already finished, and
	// ErrConflict when it is fanning_out or of another generation.
	FinishRun(ctx context.Context, p FinishRunParams) (Run, error)

	// GetRun returns the tick's run record or ErrNotFound.
	GetRun(ctx context.Context, job string, nominal time.Time) (Run, error)

	// ListRuns returns runs of Job, newest nominal time first.
	ListRuns(ctx context.Context, p ListRunsParams) ([]Run, error)

	// Claim takes the item for Owner in one conditional write:
	//  - absent → RUNNING, Attempt 1;
	//  - FAILED, or RUNNING with LeaseUntil+Skew <= Now →
	//    RUNNING(Owner, Attempt+1, LeaseUntil, Fence);
	//    but if Attempt already reached MaxAttempts (> 0) it becomes DEAD
	//    ("attempts exhausted") and Claim returns ErrTerminal;
	//  - RUNNING with a live lease → ErrHeld with the current record (even
	//    when the owner is the caller: a claim is never re-entrant);
	//  - SUCCEEDED, DEAD, CANCELLED → ErrTerminal with the current record.
	Claim(ctx context.Context, p ClaimParams) (Item, error)

	// Complete moves RUNNING(Owner, Attempt) to SUCCEEDED with Result, even
	// past LeaseUntil as long as no other claim happened. It returns
	// ErrTerminal when the item is terminal, ErrConflict when the owner or
	// attempt differ or it is not RUNNING, ErrNotFound when absent; each
	// with the current record where there is one.
	Complete(ctx context.Context, p CompleteParams) (Item, error)

	// Fail moves RUNNING(Owner, Attempt) to FAILED(Reason), or to DEAD when
	// Permanent or Attempt >= MaxAttempts (> 0). Errors as Complete.
	Fail(ctx context.Context, p FailParams) (Item, error)

	// Release gives a RUNNING(Owner, Attempt) item back without a verdict:
	// LeaseUntil becomes Now, so that any owner may claim it once the
	// claimer's skew allowance has passed (at once with no allowance); the
	// next claim counts as an attempt. Errors as Complete.
	Release(ctx context.Context, p ReleaseParams) (Item, error)

	// Extend is a heartbeat: it sets the LeaseUntil of RUNNING(Owner,
	// Attempt) to LeaseUntil, so that a long item is not taken over while
	// its holder still works on it, and returns the record. Like Complete
	// it needs no live lease, only that no other claim happened. Errors as
	// Complete: ErrTerminal when the item is terminal (a CANCELLED item
	// tells its holder to stop), ErrConflict when the owner or attempt
	// differ (a stale attempt: someone else took the item over) or it is
	// not RUNNING, ErrNotFound when absent; each with the current record
	// where there is one.
	Extend(ctx context.Context, p ExtendParams) (Item, error)

	// Cancel moves an absent, RUNNING or FAILED item to CANCELLED(Reason).
	// It returns ErrTerminal with the record when the item is terminal.
	Cancel(ctx context.Context, p CancelParams) (Item, error)

	// GetItem returns the item record or ErrNotFound. Reads are strongly
	// consistent.
	GetItem(ctx context.Context, key ItemKey) (Item, error)

	// ListItems returns every item record of the run (one generation),
	// ordered by asset. Reads are strongly consistent. It reads the whole
	// run: the core's settling reads shards (ListItemRange) instead.
	ListItems(ctx context.Context, run RunID) ([]Item, error)

	// ListItemRange returns the item records of the run whose asset is
	// between first and last, both included (byte-wise order, the order
	// of ListItems), ordered by asset: one shard of the run. When the
	// run's Partitions is above 1, only those of them in first's
	// partition (ItemPartition) are returned. Reads are strongly
	// consistent. first > last returns no record.
	ListItemRange(ctx context.Context, run RunID, first, last string) ([]Item, error)

	// MarkDone writes the settle mark (Run, Level, Index) with its counts
	// when there is none, in one conditional write, and returns it. A mark
	// is written once: when it exists already MarkDone returns
	// ErrTerminal with the mark as first written (counts and time
	// unchanged). A negative Level, Index or count is refused with an
	// error naming it, and nothing is written.
	MarkDone(ctx context.Context, p MarkParams) (Mark, error)

	// ListMarks returns the run's settle marks of level whose Index is in
	// group (Index/MarkGroup == group), ordered by Index: at most
	// MarkGroup records. Reads are strongly consistent.
	ListMarks(ctx context.Context, run RunID, level, group int) ([]Mark, error)

	// PutPage writes page (Run, Index) of a run's item list (see "Item
	// pages" in page.go) when there is none, in one conditional write, and
	// returns it. A page is written once: when it exists already PutPage
	// returns ErrTerminal with the page as first written. A page CheckPage
	// refuses is refused with its error (matching ErrBadPage) and nothing
	// is written.
	PutPage(ctx context.Context, p PutPageParams) (Page, error)

	// GetPage returns page index of the run's item list, or ErrNotFound.
	// Reads are strongly consistent.
	GetPage(ctx context.Context, run RunID, index int) (Page, error)
}
