package baton

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/batonhq/baton/internal/schedule"
)

// Job is one kind of scheduled fan-out work (docs/writing-jobs.md,
// docs/reference.md).
type Job struct {
	Name            string        // identifies the job in run ids, keys and the CLI (see ValidName)
	Schedule        string        // "rate(5 minutes)", "cron(0/5 * * * ? *)" (EventBridge); "": on demand or by a Chain only
	TimeZone        string        // the IANA zone a cron Schedule is read in ("Europe/London"); "": UTC
	Assets          []string      // the items of every run, in fan-out order; a job has Assets or Items
	Items           ItemsFunc     // computes each run's items when it opens; no Derived items then
	ExpectedItems   int           // with Items: about how many items a run holds, to spread large runs; 0: small
	Derived         []Derived     // items computed from other items of the run (fan-in)
	Limits          Limits        // timing and attempts; zero fields take DefaultLimits
	Retry           RetryPolicy   // backoff before a failed item's next attempt; zero: the engine's redelivery
	StalenessBudget time.Duration // how late after its tick a run may finish before the stack's alarm; 0: none
	RunBudget       time.Duration // how long after its run opened an item may start, else CANCELLED; 0: none
	Retention       time.Duration // how long finished runs and submissions' keys are kept; 0: DefaultRetention
	CatchUp         CatchUp       // what becomes of ticks missed while nothing ran
	RateLimits      []RateLimit   // the shared limits the job's processors take
	Chains          []Chain       // runs of other jobs started when a run of this job finishes
	Queue           JobQueue      // a work queue and consumers of the job's own; zero: the shared queue
	Bulk            bool          // run items in place, a shard at a time, without a message each
	Processor       Processor     // processes one item; required

	items map[string]struct{} // every item's name; set by NewCatalog
}

// CatchUp is a job's policy for ticks missed while nothing ran.
type CatchUp struct {
	Window        time.Duration // how far back from the triggered tick; 0: none
	Skip          bool          // record them as skipped rather than run them
	MaxPerTrigger int           // ticks one trigger catches up; 0 means 10
}

// JobQueue is a job's own work queue and consumers (docs/queues.md).
type JobQueue struct {
	Name           string // see ValidName; jobs naming one queue share it
	MaxConcurrency int    // batches processed at once: 2..1000; 0: DefaultQueueConcurrency
	Priority       int    // higher first in a shared pool (embedded store, PostgreSQL); 0: none
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

// Derived is an item computed from other items (fan-in): it runs once all
// its Inputs have SUCCEEDED, and is CANCELLED when one ends otherwise.
type Derived struct {
	Name   string
	Inputs []string      // assets or derived items of the job, without cycles
	Lease  time.Duration // replaces the job's Limits.ItemLease; 0: the job's
	Retry  *RetryPolicy  // replaces the job's Retry; nil: the job's
}

// Limits are a job's timing and attempt limits (zero: DefaultLimits').
type Limits struct {
	LeaseTTL       time.Duration // how long a coordinator's lease on the job lasts
	ClockSkew      time.Duration // allowance when deciding a lease or an item's claim has expired
	ItemLease      time.Duration // how long a claim holds an item before another consumer may take it over
	MaxAttempts    int           // claims per item before it is DEAD
	FanOutBudget   time.Duration // cap on one coordinator invocation's fan-out; 0: none (no default)
	DeadlineMargin time.Duration // the coordinator stops fanning out this long before its deadline
	Concurrency    int           // items processed at once per consumer batch
}

// DefaultRetention is a job's Retention when it sets none: 30 days.
const DefaultRetention = 30 * 24 * time.Hour

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
// wrong.
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

// Scheduled reports whether j has a Schedule.
func (j Job) Scheduled() bool { return j.Schedule != "" }

// ErrNoSchedule matches the error of a tick asked of a job without a
// Schedule.
var ErrNoSchedule = errors.New("no schedule")

// HasItem reports whether name is an asset or a derived item of j.
func (j Job) HasItem(name string) bool {
	if j.items != nil {
		_, ok := j.items[name]
		return ok
	}
	if slices.Contains(j.Assets, name) {
		return true
	}
	return slices.ContainsFunc(j.Derived, func(x Derived) bool { return x.Name == name })
}
