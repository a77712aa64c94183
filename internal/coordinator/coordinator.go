package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/fanin"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/schedule"
	"github.com/batonhq/baton/internal/telemetry"
)

// DefaultCheckpoint is the number of messages sent between two
// checkpoints of the fan-out cursor when Coordinator.Checkpoint is 0 (of
// items, in whole pages, for a stored list: see Checkpoint). Each
// chunk waits for its last batch and its checkpoint before the next one
// starts, so a larger chunk fans out faster (twice as fast at 10,000
// messages on the emulators as 100), for at most one chunk of duplicates
// after a stop, which claims absorb.
const DefaultCheckpoint = 1000

// Hierarchical fan-out defaults (Coordinator.ExpandFrom, ExpandItems): a
// catalog of 1,000 assets or more goes out as shard messages of 100
// assets, which a consumer expands in ten batch sends.
const (
	DefaultExpandFrom  = 1000
	DefaultExpandItems = 100
)

// Coordinator runs ticks. Its fields are set once; Run and Settle may be
// called concurrently (each Run call takes the job's lease).
type Coordinator struct {
	Leases lease.Store
	Ledger ledger.Store
	Queue  queue.Sender
	Jobs   *baton.Catalog
	// Classes are the catalog's job queues by name (baton.JobQueue): a
	// submission that names one as its class (Submission.Class) sends its
	// items there instead of to its job's queue. Nil: no submission may
	// name a class.
	Classes map[string]queue.Sender
	// Owner identifies the holder in the lease; it must be unique per
	// process or invocation. Each Run holds the lease as Owner#n, n a
	// per-process sequence number, so that concurrent Runs of one
	// Coordinator exclude each other too (a lease is re-entrant for its
	// owner).
	Owner string
	// Checkpoint is the number of messages sent between two checkpoints
	// of the cursor (shard messages, for a catalog that fans out in
	// them); for a stored list (a run-time list or a submission), the
	// number of items, in whole pages, whether they go as item messages
	// or page shards. 0 means DefaultCheckpoint.
	Checkpoint int
	// ExpandFrom is the catalog size from which the fan-out is
	// hierarchical: it sends shard messages of ExpandItems assets each
	// (message.NewShard), which consumers expand into the item messages,
	// so that the coordinator sends O(assets/ExpandItems) messages. 0
	// means DefaultExpandFrom; negative: never. A bulk job
	// (baton.Job.Bulk) fans out in shard messages whatever its size
	// (unless negative), which its consumers run in place. A stored list
	// (a run-time list or a submission) sends its pages past ExpandFrom
	// items as page shards (message.NewPageShard), every page for a bulk
	// job or one that declares ExpectedItems of ExpandFrom or more, none
	// for a submission to a class.
	ExpandFrom int
	// ExpandItems is the assets per shard message; 0 means
	// DefaultExpandItems. At most message.MaxExpand.
	ExpandItems int
	// ContentionWait bounds how long a submission waits for another
	// caller that holds its key's lease (opening or fanning out the same
	// submission) before it answers: 0 means DefaultContentionWait,
	// negative: it answers at once.
	ContentionWait time.Duration
	// SleepFunc, optional, pauses a waiting submission for d or until
	// ctx ends (a test's clock); nil: a timer.
	SleepFunc func(ctx context.Context, d time.Duration) error
	NowFunc   func() time.Time // nil: time.Now
	Logger    *slog.Logger     // nil: discard
	// Telemetry is the tracer and meter the invocations record with
	// (a span per invocation, its steps as child spans); nil: the global
	// OpenTelemetry providers.
	Telemetry *telemetry.Telemetry
}

// Trigger asks for the tick a schedule event belongs to.
type Trigger struct {
	Job string
	// At is the trigger time; the nominal tick is the schedule's latest
	// tick at or before At.
	At time.Time
	// Force opens the next generation even if the tick already ran.
	Force bool
	// Deadline is the invocation's deadline (Lambda's); zero: none
	// besides ctx.
	Deadline time.Time
}

// RunOutcome says what one Run call did with its trigger's run: opened,
// resumed or found it fanned out, or skipped it for another lease holder.
type RunOutcome string

const (
	OutcomeOpened           RunOutcome = "opened"             // a new run (or generation) was fanned out
	OutcomeResumed          RunOutcome = "resumed"            // a run left fanning out was continued
	OutcomeAlreadyFannedOut RunOutcome = "already_fanned_out" // the tick's run was fanned out; nothing enqueued
	OutcomeSkipped          RunOutcome = "skipped"            // another owner holds the lease
	OutcomePaused           RunOutcome = "paused"             // the job is paused: the tick is skipped and recorded
)

// Why a fan-out stopped before its end (Summary.Stopped).
const (
	StoppedDeadline = "deadline" // the invocation deadline minus the margin was reached
	StoppedBudget   = "budget"   // Limits.FanOutBudget was spent
)

// Summary reports one Run.
type Summary struct {
	Job     string
	Run     ledger.RunID // zero when skipped
	Nominal time.Time
	Outcome RunOutcome
	// Enqueued is the item messages sent by this invocation, or, in a
	// hierarchical fan-out, the items its shard messages stand for.
	Enqueued int
	// ShardMessages is the shard messages sent by this invocation (0
	// unless the fan-out is hierarchical).
	ShardMessages int
	// Cursor is how many catalog assets the run has sent, in all; Total is
	// the catalog size. Cursor == Total once fanned out.
	Cursor, Total int
	Fence         int64        // the fence of this invocation's lease
	Holder        *lease.Lease // the live holder when skipped
	// Stopped is why the fan-out stopped early (StoppedDeadline,
	// StoppedBudget); "" when it ran to the end.
	Stopped string
	// Deduped is set by Submit when the submission's dedupe key found the
	// run of an earlier submission within the job's retention: nothing new
	// was opened, and Run is that run.
	Deduped bool
	// PayloadDiffers is set with Deduped when the submission's items
	// (names or payloads) differ from those its key's run was opened
	// with: the new items were not used. False when that is not known (a
	// run opened before the ledger kept its items' digest, or a chain's).
	PayloadDiffers bool
	// Pending is set with OutcomeSkipped when the tick itself has not been
	// fanned out (no run yet, or its run still fanning out): the holder is
	// busy with another tick, and this trigger must be retried or the tick
	// is never run. A skip of a tick already fanned out is a plain duplicate.
	Pending        bool
	AcquireLatency time.Duration
	Duration       time.Duration
	// FannedOutAt is when this invocation ended the fan-out of a stored
	// list's run (its last message sent and the run marked fanned out),
	// before it settled it; zero otherwise.
	FannedOutAt time.Time
	// Pause is the job's pause record when the outcome is OutcomePaused.
	Pause *lease.Pause
}

// invocations numbers Run calls, to make each one's lease owner unique.
var invocations atomic.Int64

// ErrNoTime is matched by Run's error when the invocation deadline leaves
// no time to take the lease.
var ErrNoTime = errors.New("no time left before the deadline")

// Run handles one trigger; see the package documentation. Contention for
// the lease is not an error (OutcomeSkipped). On error the summary says
// how far the run got.
//
// Its steps: resolve the trigger's tick, acquire the job's lease, open the
// tick's run, fan it out (or settle it when it was fanned out already),
// resume or settle the job's earlier runs left unfinished, and release the
// lease.
func (c *Coordinator) Run(ctx context.Context, tr Trigger) (sum Summary, err error) {
	ctx, span := c.startInvocation(ctx, "trigger", tr.Job)
	defer func() { c.endInvocation(ctx, span, &sum, err) }()
	t := &tickRun{tr: tr, start: c.now(), sum: &sum}
	sum = Summary{Job: tr.Job}
	if err := c.resolve(t); err != nil {
		return sum, err
	}
	if paused, err := c.skipPaused(ctx, t); paused || err != nil {
		return sum, err
	}
	if acquired, err := c.acquire(ctx, t); !acquired {
		return sum, err // nil when skipped
	}
	defer c.finish(ctx, t)
	run, outcome, err := c.open(ctx, t)
	if err != nil {
		return sum, err
	}
	if outcome == ledger.AlreadyFannedOut {
		sum.Cursor, sum.Total = run.Total, run.Total
		sctx, span := c.step(ctx, telemetry.SpanSettle)
		c.settleQuietly(sctx, t.log, t.job.Name, sum.Nominal, false)
		span.End()
	} else if err := c.tracedFanOut(ctx, t, run); err != nil {
		return sum, err
	} else if sum.Stopped == "" {
		// Consumers that ended items while the run was still fanning out
		// could not settle it (the run's total was not known yet): when
		// they ended all of a shard's items before the run was marked
		// fanned out, nobody else would settle it before the job's next
		// trigger. The coordinator that marked it does, now, reading every
		// shard once (a sweep), so that shards completed during the fan-out
		// are marked even behind a shard still in flight.
		sctx, span := c.step(ctx, telemetry.SpanSettle)
		c.settleQuietly(sctx, t.log, t.job.Name, sum.Nominal, true)
		span.End()
	}
	if sum.Stopped == "" {
		// The job's earlier runs: resumed or settled under a span of
		// their own.
		sctx, span := c.step(ctx, telemetry.SpanSettle+".earlier")
		c.tendRecent(sctx, t, sum.Nominal)
		c.catchUp(sctx, t, sum.Nominal)
		span.End()
	}
	return sum, nil
}

// tracedFanOut is fanOut under a span of its own.
func (c *Coordinator) tracedFanOut(ctx context.Context, t *tickRun, run ledger.Run) (err error) {
	ctx, span := c.step(ctx, telemetry.SpanFanOut)
	defer func() {
		if span.IsRecording() {
			span.SetAttributes(telemetry.KeyEnqueue.Int(t.sum.Enqueued))
		}
		telemetry.End(span, t.sum.Stopped, err)
	}()
	return c.fanOut(ctx, t, run)
}

// tickRun is one Run call on its way through its steps.
type tickRun struct {
	tr    Trigger
	start time.Time
	sum   *Summary // Run's result, filled in as the steps go
	job   baton.Job
	owner string // the lease's owner: Owner#n
	// log names the job, the tick and the owner (resolve), then the fence
	// (acquire) and the run (open).
	log  *slog.Logger
	hold *holding // the lease, once acquired
	// items, when set, are the run's items in place of the job's (a
	// submission's, see Submit).
	items baton.ItemsFunc
	// parent is the run whose finish started this one (a chain).
	parent ledger.RunID
	// queue, when set, is where the run's items go in place of Queue (a
	// submission's class).
	queue queue.Sender
}

// sender is where t's items go.
func (c *Coordinator) sender(t *tickRun) queue.Sender {
	if t.queue != nil {
		return t.queue
	}
	return c.Queue
}

// resolve decides which tick the trigger asks for, refusing a trigger
// that cannot be run: an unknown or invalid job, no trigger time, a
// coordinator without an owner, or a schedule with no tick at or before
// the trigger time. It sets t.job, t.owner, t.log and the summary's
// Nominal and Total.
func (c *Coordinator) resolve(t *tickRun) error {
	tr, sum := t.tr, t.sum
	j, err := c.Jobs.Lookup(tr.Job)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if err := j.Validate(); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if tr.At.IsZero() {
		return fmt.Errorf("run %s: trigger has no time", tr.Job)
	}
	if c.Owner == "" {
		return fmt.Errorf("run %s: coordinator has no owner", tr.Job)
	}
	if !j.Scheduled() {
		return fmt.Errorf("job %s has %w: it runs on demand (submit) or by a chain, and a trigger cannot tick it", tr.Job, baton.ErrNoSchedule)
	}
	sched, err := schedule.ParseIn(j.Schedule, j.TimeZone)
	if err != nil {
		return fmt.Errorf("run %s: %w", tr.Job, err)
	}
	sum.Nominal = sched.Prev(tr.At).UTC()
	if sum.Nominal.IsZero() {
		return fmt.Errorf("run %s: schedule %q has no tick at or before %s", tr.Job, j.Schedule, tr.At.UTC().Format(time.RFC3339Nano))
	}
	sum.Total = len(j.Assets)
	t.job, t.owner = j, fmt.Sprintf("%s#%d", c.Owner, invocations.Add(1))
	t.log = c.logger().With(slog.String("job", j.Name), slog.Time("nominal", sum.Nominal), slog.String("owner", t.owner))
	return nil
}

// skipPaused skips the tick of a paused job (lease.Pauser), recording it
// with the job's pause (OutcomePaused): no lease is taken, nothing is
// opened. A forced trigger (an operator's replay) runs all the same. A
// store without the ability never pauses. An error reading the flag fails
// the trigger, to be retried: a paused job is not run by mistake.
func (c *Coordinator) skipPaused(ctx context.Context, t *tickRun) (bool, error) {
	pauser, ok := lease.PauserOf(c.Leases)
	if !ok || t.tr.Force {
		return false, nil
	}
	sum := t.sum
	p, err := pauser.PauseOf(ctx, t.job.Name)
	if err != nil {
		return false, fmt.Errorf("run %s %s: read pause: %w", t.job.Name, sum.Nominal.Format(time.RFC3339), err)
	}
	if !p.Paused {
		return false, nil
	}
	p, err = pauser.RecordSkipped(ctx, t.job.Name, sum.Nominal)
	if errors.Is(err, lease.ErrNotPaused) {
		return false, nil // resumed meanwhile
	}
	if err != nil {
		return false, fmt.Errorf("run %s %s: record paused tick: %w", t.job.Name, sum.Nominal.Format(time.RFC3339), err)
	}
	sum.Outcome, sum.Pause = OutcomePaused, &p
	sum.Duration = c.now().Sub(t.start)
	t.log.InfoContext(ctx, "job paused; tick skipped", slog.String("phase", "pause"), slog.Time("paused_since", p.Since),
		slog.String("paused_by", p.By), slog.Int64("skipped", p.Skipped))
	return true, nil
}

// acquire decides whether this invocation runs the tick: it takes the
// job's lease, for the job's LeaseTTL cut to the deadline (ErrNoTime when
// the deadline minus the margin has come). acquired is false when Run
// stops here: on error, or when another owner holds the lease
// (OutcomeSkipped, with Pending when the tick itself still needs a
// coordinator).
func (c *Coordinator) acquire(ctx context.Context, t *tickRun) (acquired bool, err error) {
	ctx, span := c.step(ctx, telemetry.SpanLease)
	defer func() {
		outcome := "acquired"
		if !acquired {
			outcome = string(t.sum.Outcome)
		}
		if span.IsRecording() && t.hold != nil {
			span.SetAttributes(telemetry.KeyFence.Int64(t.hold.lease.Fence))
		}
		telemetry.End(span, outcome, err)
	}()
	j, sum, lim, start := t.job, t.sum, t.job.Limits, t.start
	ttl := c.ttl(lim, start, t.tr.Deadline)
	if ttl <= 0 {
		return false, fmt.Errorf("run %s %s: %w (deadline %s, margin %s)", j.Name,
			sum.Nominal.Format(time.RFC3339), ErrNoTime, t.tr.Deadline.Format(time.RFC3339Nano), lim.DeadlineMargin)
	}
	l, err := c.Leases.Acquire(ctx, lease.AcquireParams{Job: j.Name, Owner: t.owner, TTL: ttl, Now: start, Skew: lim.ClockSkew})
	sum.AcquireLatency = c.now().Sub(start)
	var held *lease.HeldError
	if errors.As(err, &held) {
		h := held.Holder
		sum.Outcome, sum.Holder = OutcomeSkipped, &h
		sum.Pending = c.tickPending(ctx, j.Name, sum.Nominal)
		sum.Duration = c.now().Sub(start)
		t.log.InfoContext(ctx, "lease held; skipped", slog.String("phase", "acquire"),
			slog.String("holder", h.Owner), slog.Time("holder_expires", h.ExpiresAt), slog.Int64("holder_fence", h.Fence),
			slog.Bool("tick_pending", sum.Pending), slog.Duration("latency", sum.AcquireLatency))
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("run %s: acquire lease: %w", j.Name, err)
	}
	sum.Fence = l.Fence
	t.hold = &holding{lease: l, ttl: ttl, renewed: start}
	t.log = t.log.With(slog.Int64("fence", l.Fence))
	t.log.InfoContext(ctx, "lease acquired", slog.String("phase", "acquire"),
		slog.Time("expires", l.ExpiresAt), slog.Duration("latency", sum.AcquireLatency))
	return true, nil
}

// open opens the tick's run under the lease's fence, or finds it: a new
// run (or, with Force, generation), one left fanning out to resume, or one
// already fanned out.
func (c *Coordinator) open(ctx context.Context, t *tickRun) (ledger.Run, ledger.OpenOutcome, error) {
	sum := t.sum
	openStart := c.now()
	ctx, span := c.step(ctx, telemetry.SpanOpen)
	run, outcome, err := c.Ledger.OpenRun(ctx, ledger.OpenRunParams{
		Job: t.job.Name, Nominal: sum.Nominal, Fence: t.hold.lease.Fence, Force: t.tr.Force, Now: openStart,
		Shards: openShards(t.job), Pages: jobspec.RunTime(t.job), TraceID: telemetry.TraceID(ctx),
	})
	if span.IsRecording() && err == nil {
		span.SetAttributes(telemetry.KeyRun.String(run.ID.String()))
	}
	telemetry.End(span, string(outcome), err)
	if err != nil {
		return run, outcome, fmt.Errorf("run %s %s: open: %w", t.job.Name, sum.Nominal.Format(time.RFC3339), err)
	}
	sum.Run, sum.Cursor, sum.Outcome = run.ID, run.Cursor, RunOutcome(outcome)
	t.log = t.log.With(slog.String("run", run.ID.String()))
	t.log.InfoContext(ctx, "run opened", slog.String("phase", "open"), slog.String("outcome", string(outcome)),
		slog.Int("cursor", run.Cursor), slog.Duration("duration", c.now().Sub(openStart)))
	return run, outcome, nil
}

// openShards is the shard count a run of j opens with: one per
// fanin.ShardItems of its catalog items; for a run-time list, one per
// page of its declared expected size (baton.Job.ExpectedItems; 0: one),
// from which a store that partitions fixes the run's item partitions.
func openShards(j baton.Job) int {
	if jobspec.RunTime(j) {
		return pagesOf(j.ExpectedItems)
	}
	return fanin.Shards(len(j.Assets) + len(j.Derived))
}

// pagesOf is the number of pages of a list of n items (at least 1).
func pagesOf(n int) int { return max(1, (n+ledger.PageItems-1)/ledger.PageItems) }

// finish ends a Run that acquired the lease, whatever its result: it
// releases the lease and reports the run's duration.
func (c *Coordinator) finish(ctx context.Context, t *tickRun) {
	sum := t.sum
	c.release(ctx, t.log, t.hold)
	sum.Duration = c.now().Sub(t.start)
	t.log.InfoContext(ctx, "run done", slog.String("outcome", string(sum.Outcome)), slog.Int("enqueued", sum.Enqueued),
		slog.Int("cursor", sum.Cursor), slog.Int("total", sum.Total), slog.String("stopped", sum.Stopped),
		slog.Duration("duration", sum.Duration))
}

// holding is the lease the invocation holds.
type holding struct {
	lease   lease.Lease
	ttl     time.Duration
	renewed time.Time
	// unleased: no lease is held (a chain started by a consumer, fence
	// 0): nothing to renew or release.
	unleased bool
}

// ttl is the lease length: the job's LeaseTTL, cut to the deadline.
func (c *Coordinator) ttl(lim baton.Limits, now, deadline time.Time) time.Duration {
	ttl := lim.LeaseTTL
	if !deadline.IsZero() {
		if left := deadline.Sub(now); left < ttl {
			ttl = left
		}
		if deadline.Add(-lim.DeadlineMargin).Sub(now) <= 0 {
			return 0
		}
	}
	return ttl
}

// release gives the lease back, best effort: the lease expires anyway.
func (c *Coordinator) release(ctx context.Context, log *slog.Logger, h *holding) {
	start := c.now()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	ctx, span := c.step(ctx, telemetry.SpanRelease)
	err := c.Leases.Release(ctx, lease.ReleaseParams{Job: h.lease.Job, Owner: h.lease.Owner, Fence: h.lease.Fence})
	telemetry.End(span, "", err)
	if err != nil {
		log.WarnContext(ctx, "lease release failed; it will expire", slog.String("phase", "release"),
			slog.Time("expires", h.lease.ExpiresAt), slog.Any("error", err))
		return
	}
	log.InfoContext(ctx, "lease released", slog.String("phase", "release"), slog.Duration("duration", c.now().Sub(start)))
}

func (c *Coordinator) now() time.Time {
	if c.NowFunc != nil {
		return c.NowFunc()
	}
	return time.Now()
}

func (c *Coordinator) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// tickPending reports whether the tick still needs a coordinator: it has no
// run, or its run is still fanning out. A read error counts as pending (the
// caller retries rather than risk dropping the tick).
func (c *Coordinator) tickPending(ctx context.Context, job string, nominal time.Time) bool {
	run, err := c.Ledger.GetRun(ctx, job, nominal)
	if err != nil {
		return true
	}
	return run.State == ledger.RunFanningOut
}
