package baton

import (
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/schedule"
)

// Job is one kind of scheduled fan-out work: on every tick of Schedule, a
// run opens and one item per asset is processed by Processor; each derived
// item runs once its inputs have succeeded.
//
// A Job is plain data plus its Processor. Fields are added over time (the
// API is pre-1.0); a zero value of a new field always keeps today's
// behaviour.
type Job struct {
	// Name identifies the job in run ids, keys, events and the CLI:
	// 1-64 letters, digits, '_', '.', '-', starting with a letter or digit.
	Name string
	// Schedule is an Amazon EventBridge schedule expression:
	// "rate(1 minute)", "rate(5 minutes)", "cron(0/5 * * * ? *)". Ticks
	// are the schedule's own instants (UTC); a trigger is mapped to the
	// latest tick at or before it. "" makes the job run only on demand
	// (submissions) or by a Chain: it has no ticks (see Scheduled).
	Schedule string
	// TimeZone, optional, is the IANA time zone ("Europe/London") a cron
	// Schedule's fields are read in, as EventBridge Scheduler's
	// ScheduleExpressionTimezone: cron(0 9 ? * MON-FRI *) in Europe/London
	// ticks at 09:00 London time all year; a time the clocks skip does
	// not tick, one they go through twice ticks once. Ticks and run ids
	// stay UTC. "" is UTC; a rate does not depend on it.
	TimeZone string
	// Assets are the items of every run, in fan-out order, when they are
	// the same for every run. A job has Assets or Items, not both.
	Assets []string
	// Items, optional, computes each run's items when it opens, in place
	// of Assets: see ItemsFunc. The list is stored with the run, in pages,
	// and its items may carry payloads. A job with Items has no Derived
	// items in this version, for three reasons. A derived item names its
	// inputs when the job is defined, and Catalog checks them (unknown
	// names, cycles) then; a run-time list is known only when its run
	// opens, so an input missing from a run's list could not be refused
	// before the run, and its derived item would wait for it forever. A
	// run-time run settles by its stored pages (a page is a settle shard,
	// and a consumer marks its page's shard when the page's last item
	// ends, while the run may still be fanning out): a derived item is on
	// no page, so the run would be marked finished before, or without,
	// its derived items. And its consumers check membership against the
	// pages, which a derived item would fail. Fan-in over a run-time list
	// belongs in the chained job (Chains: it starts when the run
	// finishes, and its processor reads the run's results with
	// Task.ParentResults), or in a job
	// with constant Assets and Derived beside it in the same catalog, as
	// the job model's end-to-end test runs them.
	Items ItemsFunc
	// ExpectedItems, optional, is how many items a run of a job with
	// Items is expected to have, declared because the list's final size
	// is not known when the run opens. The run's item partitions are
	// fixed from it then and stored with the run: on DynamoDB, a run of
	// about 1,024 expected items or more spreads its item records over
	// one partition key per 1,024 expected items (16 pages of 64), a
	// page's items in one key and consecutive pages in different keys,
	// so that no key takes more than a small share of the run's writes
	// (DynamoDB serves about 1,000 write units per second per key). A
	// run that turns out larger keeps working: its later pages share
	// the same keys, which then hold more items each. 0 (the default)
	// keeps every item of a run in one place, which suits lists of up to
	// a few thousand items; the embedded store and PostgreSQL ignore the
	// partitions. On every engine, a run of at least the coordinator's
	// expansion threshold (1,000 items by default) expected fans out one
	// message per stored page (up to 64 items), which a consumer expands
	// into the page's item messages (or runs in place, for a bulk job);
	// without it, only the pages past the threshold go out so.
	// At most MaxExpectedItems; only with Items.
	ExpectedItems int
	// Derived are the items computed from other items of the same run
	// (fan-in), in the order they are listed.
	Derived []Derived
	// Limits are the timing and retry limits; zero fields take the
	// defaults of DefaultLimits.
	Limits Limits
	// Retry is how long a failed item waits before its next attempt
	// (see RetryPolicy); a processor's RetryAfter error names its own.
	// The zero value keeps the engine's redelivery delay.
	Retry RetryPolicy
	// StalenessBudget, optional, is how long after its tick a run's items
	// may finish before operators are told: the stack's alarm on
	// tick-to-done uses it. 0: no budget.
	StalenessBudget time.Duration
	// RunBudget, optional, is how long after its run opened an item may
	// start: a message handled later than that does not start its item,
	// which is CANCELLED with the reason "run budget … exceeded" (counted
	// as cancelled in status and metrics, and its run settles partial)
	// rather than run late. It bounds starts, not runs: an item started in
	// time runs on. 0: no budget.
	RunBudget time.Duration
	// Retention, optional, is how long a finished run is kept and counts
	// for the dedupe of submissions: the same dedupe key submitted within
	// Retention of its run's finish returns that run; later, it opens the
	// key's next generation. 0 means DefaultRetention.
	Retention time.Duration
	// CatchUp says what becomes of ticks that have no run because nothing
	// triggered them (the schedule or the local runtime was down). The
	// zero value catches nothing up.
	CatchUp CatchUp
	// RateLimits are the shared rate limits the job's processors use
	// (see RateLimit).
	RateLimits []RateLimit
	// Chains start runs of other jobs when a run of this job finishes
	// (see Chain).
	Chains []Chain
	// Queue, optional, gives the job a work queue of its own, consumed by
	// consumers of its own (at most Queue.MaxConcurrency batches at once),
	// so that a noisy job cannot starve the others of consumers, and the
	// others cannot starve it. The zero value: the deployment's shared work
	// queue.
	Queue JobQueue
	// Bulk runs the job's runs shard by shard in place: the consumer that
	// receives a shard message (the coordinator fans a bulk job's assets
	// out as shard messages of Coordinator.ExpandItems, 100 by default,
	// whatever the catalog's size) runs the shard's items itself, up to
	// Limits.Concurrency at once, instead of sending one message per item.
	// Each item is still claimed, processed and completed on its own,
	// exactly as a message of its own would be (idempotency key, fence,
	// effects, heartbeats, cancellation); an item that fails with
	// attempts left, is held by a live claim elsewhere, or cannot start
	// before the invocation's deadline is handed over as an ordinary item
	// message, and the shard message is acknowledged once every item of it
	// is terminal or handed over. It saves the queue requests of the items
	// (three per item: send, receive, delete) and settles each shard once.
	// A failed item is handed over at once: its retry comes when its
	// message is received, without the visibility timeout that delays a
	// per-item retry (queues have no delayed send in this version).
	// For many short items; a job of long items gains little. A bulk job
	// with Items (a run-time list) fans out one page shard message per
	// stored page (up to 64 items), whose consumer runs the page's items
	// in place the same way. Derived items run as messages of their own.
	Bulk bool
	// Processor processes one item. Required.
	Processor Processor

	items map[string]struct{} // every item's name; set by NewCatalog
}

// CatchUp is a job's policy for missed ticks, modelled on Temporal's
// catch-up window: when a coordinator runs a tick, it looks back Window
// for the ticks without a run (missed while nothing ran) and runs them
// (oldest first, at most MaxPerTrigger per trigger, within the
// invocation's deadline), or, with Skip, leaves them to show as skipped in
// `baton status`. Ticks before the job's first run were never due: a
// job's first run catches nothing up.
type CatchUp struct {
	// Window is how far before the triggered tick missed ticks are caught
	// up; 0: none (missed ticks show as missed in status).
	Window time.Duration
	// Skip leaves the missed ticks within Window unrun, on purpose: status
	// shows them as skipped, not missed.
	Skip bool
	// MaxPerTrigger bounds the ticks one trigger catches up; 0 means 10.
	MaxPerTrigger int
}

// JobQueue names a work queue of the job's own (Job.Queue). Its messages
// are the same as the shared queue's; only where they wait, and who
// consumes them, differ.
//
// On AWS it is an SQS queue (with the same dead-letter queue) read by the
// consumer function through an event-source mapping of its own whose
// ScalingConfig.MaximumConcurrency is MaxConcurrency; `template check`
// (and CheckTemplate) holds the template to it. The local runtime runs a
// consumer pool per queue.
type JobQueue struct {
	// Name names the queue among the deployment's: 1-64 letters, digits,
	// '_', '.', '-'. Jobs that name the same queue share it (and must
	// agree on MaxConcurrency). "" means the shared work queue.
	Name string
	// MaxConcurrency bounds the batches processed at once from the queue:
	// 2..1000, as Lambda's ScalingConfig.MaximumConcurrency; 0 means
	// DefaultQueueConcurrency.
	MaxConcurrency int
	// Priority orders the queue among the other queues with a Priority
	// on the embedded store: those share one pool of consumers (the sum
	// of their MaxConcurrency) that serves the highest Priority first,
	// while each queue still gets at least its MaxConcurrency's share of
	// the pool's batches when it has work. 0: no order (a pool of its
	// own). On AWS and PostgreSQL every queue keeps its own consumers and
	// the Priority has no effect (two event-source mappings cannot order
	// work; a queue's MaxConcurrency is its share).
	Priority int
}

// DefaultQueueConcurrency is a job queue's MaxConcurrency when unset.
const DefaultQueueConcurrency = 2

// Concurrency is q's MaxConcurrency, or its default.
func (q JobQueue) Concurrency() int {
	if q.MaxConcurrency == 0 {
		return DefaultQueueConcurrency
	}
	return q.MaxConcurrency
}

// Derived is an item computed from other items of the same run (fan-in).
// It is enqueued once all its Inputs have SUCCEEDED and receives their
// results in Task.Inputs; it is CANCELLED when an input ends DEAD or
// CANCELLED, and so are the derived items that depend on it in turn.
//
// Inputs may be assets or other derived items: derived items form a
// directed acyclic graph of any depth (Validate refuses a cycle and names
// it), listed in any order.
type Derived struct {
	Name   string
	Inputs []string // assets or derived items of the job
	// Lease, optional, is this item's lease in place of the job's
	// Limits.ItemLease: for a derived item that takes longer than the
	// assets (a heartbeat renews it by as much). 0: the job's.
	Lease time.Duration
	// Retry, optional, is this item's retry policy in place of the job's
	// Retry. nil: the job's.
	Retry *RetryPolicy
}

// Limits are the timing and retry limits the runtime applies to a job.
// A zero field takes its value from DefaultLimits; a negative one is an
// error.
type Limits struct {
	LeaseTTL       time.Duration // how long a coordinator's lease on the job lasts
	ClockSkew      time.Duration // allowance when deciding a lease or an item's claim has expired
	ItemLease      time.Duration // how long a claim holds an item before another consumer may take it over
	MaxAttempts    int           // claims per item before it is DEAD
	FanOutBudget   time.Duration // cap on one coordinator invocation's fan-out; 0: none (no default)
	DeadlineMargin time.Duration // the coordinator stops fanning out this long before its deadline
	Concurrency    int           // items processed at once per consumer batch
}

// DefaultRetention is a job's Retention when it sets none: 30 days, the
// DynamoDB store's default time to live of finished runs.
const DefaultRetention = 30 * 24 * time.Hour

// RetentionOrDefault returns j.Retention, or DefaultRetention when it is 0.
func (j Job) RetentionOrDefault() time.Duration {
	if j.Retention > 0 {
		return j.Retention
	}
	return DefaultRetention
}

// DefaultLimits are the limits a zero Limits field takes.
var DefaultLimits = Limits{
	LeaseTTL:       2 * time.Minute,
	ClockSkew:      2 * time.Second,
	ItemLease:      30 * time.Second,
	MaxAttempts:    5,
	DeadlineMargin: 2 * time.Second,
	Concurrency:    16,
}

// withDefaults returns l with its zero fields set from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.LeaseTTL == 0 {
		l.LeaseTTL = d.LeaseTTL
	}
	if l.ClockSkew == 0 {
		l.ClockSkew = d.ClockSkew
	}
	if l.ItemLease == 0 {
		l.ItemLease = d.ItemLease
	}
	if l.MaxAttempts == 0 {
		l.MaxAttempts = d.MaxAttempts
	}
	if l.DeadlineMargin == 0 {
		l.DeadlineMargin = d.DeadlineMargin
	}
	if l.Concurrency == 0 {
		l.Concurrency = d.Concurrency
	}
	return l
}

// MaxExpectedItems bounds Job.ExpectedItems: 100,000,000 items.
const MaxExpectedItems = 100_000_000

// Validate reports the first problem with j, naming the job and what is
// wrong: a bad name, a schedule that does not parse, no assets (and no
// Items), both Assets and Items, Items with derived items, an
// ExpectedItems out of range or without Items, a
// duplicate or clashing item name, a derived item whose input is not an
// item of the job or is itself, derived items that form a cycle (named:
// `derived "A" → "B" → "A" forms a cycle`), a negative limit, no
// processor. Zero limits are valid (they take
// their defaults).
func (j Job) Validate() error {
	if err := ValidName("job", j.Name); err != nil {
		return err
	}
	if _, err := schedule.Location(j.TimeZone); err != nil {
		return fmt.Errorf("job %s: TimeZone: %w", j.Name, err)
	}
	switch {
	case j.Scheduled():
		if _, err := schedule.ParseIn(j.Schedule, j.TimeZone); err != nil {
			return fmt.Errorf("job %s: schedule: %w", j.Name, err)
		}
	case j.TimeZone != "":
		return fmt.Errorf("job %s: TimeZone %s without a Schedule (a job without one runs on demand or by a chain)", j.Name, j.TimeZone)
	case j.CatchUp != (CatchUp{}):
		return fmt.Errorf("job %s: CatchUp without a Schedule: a job without one has no ticks to catch up", j.Name)
	}
	switch {
	case j.Items != nil && len(j.Assets) > 0:
		return fmt.Errorf("job %s: both Assets and Items: a job's items are constant (Assets) or computed when its run opens (Items), not both", j.Name)
	case j.Items != nil && len(j.Derived) > 0:
		return fmt.Errorf("job %s: derived items with Items: a job whose items are computed when its run opens has no derived items; summarise its runs with a chained job (Chains) whose processor reads Task.ParentResults", j.Name)
	case j.Items == nil && len(j.Assets) == 0:
		return fmt.Errorf("job %s: no assets (and no Items function)", j.Name)
	case j.ExpectedItems < 0 || j.ExpectedItems > MaxExpectedItems:
		return fmt.Errorf("job %s: ExpectedItems %d: must be between 0 and %d", j.Name, j.ExpectedItems, MaxExpectedItems)
	case j.ExpectedItems > 0 && j.Items == nil:
		return fmt.Errorf("job %s: ExpectedItems without Items: a job with constant Assets has their number of items", j.Name)
	}
	seen := map[string]bool{}
	for _, a := range j.Assets {
		if err := ValidName("asset", a); err != nil {
			return fmt.Errorf("job %s: %w", j.Name, err)
		}
		if seen[a] {
			return fmt.Errorf("job %s: asset %s listed twice", j.Name, a)
		}
		seen[a] = true
	}
	if err := j.checkDerived(seen); err != nil {
		return fmt.Errorf("job %s: %w", j.Name, err)
	}
	l := j.Limits
	switch {
	case l.LeaseTTL < 0, l.ItemLease < 0, l.ClockSkew < 0, l.FanOutBudget < 0, l.DeadlineMargin < 0:
		return fmt.Errorf("job %s: limits: LeaseTTL, ItemLease, ClockSkew, FanOutBudget and DeadlineMargin must not be negative", j.Name)
	case l.MaxAttempts < 0:
		return fmt.Errorf("job %s: limits: MaxAttempts must not be negative", j.Name)
	case l.Concurrency < 0:
		return fmt.Errorf("job %s: limits: Concurrency must not be negative", j.Name)
	case j.StalenessBudget < 0:
		return fmt.Errorf("job %s: StalenessBudget must not be negative", j.Name)
	case j.RunBudget < 0:
		return fmt.Errorf("job %s: RunBudget must not be negative", j.Name)
	case j.Retention < 0:
		return fmt.Errorf("job %s: Retention must not be negative", j.Name)
	case j.CatchUp.Window < 0 || j.CatchUp.MaxPerTrigger < 0:
		return fmt.Errorf("job %s: catch-up: Window and MaxPerTrigger must not be negative", j.Name)
	case j.Queue.Name == "" && j.Queue.MaxConcurrency != 0:
		return fmt.Errorf("job %s: queue: MaxConcurrency %d without a Name (the shared queue's consumers are the deployment's)", j.Name, j.Queue.MaxConcurrency)
	case j.Queue.Name == "" && j.Queue.Priority != 0:
		return fmt.Errorf("job %s: queue: Priority %d without a Name", j.Name, j.Queue.Priority)
	case j.Queue.Priority < 0:
		return fmt.Errorf("job %s: queue %s: Priority %d must not be negative", j.Name, j.Queue.Name, j.Queue.Priority)
	case j.Queue.MaxConcurrency != 0 && (j.Queue.MaxConcurrency < 2 || j.Queue.MaxConcurrency > 1000):
		return fmt.Errorf("job %s: queue %s: MaxConcurrency %d, want 2..1000 (Lambda's ScalingConfig.MaximumConcurrency)", j.Name, j.Queue.Name, j.Queue.MaxConcurrency)
	}
	if j.Queue.Name != "" {
		if err := ValidName("queue", j.Queue.Name); err != nil {
			return fmt.Errorf("job %s: %w", j.Name, err)
		}
	}
	if err := j.Retry.validate(); err != nil {
		return fmt.Errorf("job %s: retry policy: %w", j.Name, err)
	}
	for _, d := range j.Derived {
		if d.Retry == nil {
			continue
		}
		if err := d.Retry.validate(); err != nil {
			return fmt.Errorf("job %s: derived %s: retry policy: %w", j.Name, d.Name, err)
		}
	}
	seenLimits := map[string]bool{}
	for _, r := range j.RateLimits {
		if err := r.check(); err != nil {
			return fmt.Errorf("job %s: %w", j.Name, err)
		}
		if seenLimits[r.Name] {
			return fmt.Errorf("job %s: rate limit %s listed twice", j.Name, r.Name)
		}
		seenLimits[r.Name] = true
	}
	if j.Processor == nil {
		return fmt.Errorf("job %s: no processor", j.Name)
	}
	return nil
}

// ItemNames returns the names of every item of a run of j: the assets in
// fan-out order, then the derived items.
func (j Job) ItemNames() []string {
	names := make([]string, 0, len(j.Assets)+len(j.Derived))
	names = append(names, j.Assets...)
	for _, x := range j.Derived {
		names = append(names, x.Name)
	}
	return names
}

// Scheduled reports whether j runs on a schedule: false for a job
// without Schedule, which runs only on demand (submissions) or by a Chain,
// and whose ticks are refused with ErrNoSchedule.
func (j Job) Scheduled() bool { return j.Schedule != "" }

// ErrNoSchedule matches the error of a tick (a trigger, a replay of a
// tick, a catch-up) asked of a job that has no Schedule. The error reads
// "job reindex has no schedule: it runs on demand (submit) or by a chain".
var ErrNoSchedule = errors.New("no schedule")

// ItemRetry returns the retry policy of the item called name: its
// Derived.Retry when it is a derived item that sets one, else the job's
// Retry.
func (j Job) ItemRetry(name string) RetryPolicy {
	if x, ok := j.DerivedItem(name); ok && x.Retry != nil {
		return *x.Retry
	}
	return j.Retry
}

// ItemLease returns the lease of the item called name: its Derived.Lease
// when it is a derived item that sets one, else the job's
// Limits.ItemLease (DefaultLimits' when zero).
func (j Job) ItemLease(name string) time.Duration {
	if x, ok := j.DerivedItem(name); ok && x.Lease > 0 {
		return x.Lease
	}
	return j.Limits.withDefaults().ItemLease
}

// MaxItemLease returns the longest lease of any item of j (see
// ItemLease): what a consumer function's timeout must cover.
func (j Job) MaxItemLease() time.Duration {
	longest := j.Limits.withDefaults().ItemLease
	for _, x := range j.Derived {
		longest = max(longest, x.Lease)
	}
	return longest
}

// IsDerived reports whether name is one of j's derived items.
func (j Job) IsDerived(name string) bool {
	_, ok := j.DerivedItem(name)
	return ok
}

// DerivedItem returns the derived item called name.
func (j Job) DerivedItem(name string) (Derived, bool) {
	for _, x := range j.Derived {
		if x.Name == name {
			return x, true
		}
	}
	return Derived{}, false
}

// RunTime reports whether j's items are computed when its run opens
// (Items is set).
func (j Job) RunTime() bool { return j.Items != nil }

// HasItem reports whether name is an asset or a derived item of j. For a
// job of a Catalog it is one map lookup. A job with Items has no constant
// items: its runs' items are checked against their stored lists.
func (j Job) HasItem(name string) bool {
	if j.items != nil {
		_, ok := j.items[name]
		return ok
	}
	for _, a := range j.Assets {
		if a == name {
			return true
		}
	}
	return j.IsDerived(name)
}

// DependentsOf returns the derived items that take asset as an input.
func (j Job) DependentsOf(asset string) []Derived {
	var out []Derived
	for _, x := range j.Derived {
		for _, in := range x.Inputs {
			if in == asset {
				out = append(out, x)
				break
			}
		}
	}
	return out
}
