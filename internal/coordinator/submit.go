package coordinator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/telemetry"
)

// MaxSubmissionItems bounds the items of one submission: a submission is
// held in memory whole by whoever submits it (larger lists belong in a
// job's Items function, which is paged).
const MaxSubmissionItems = 100_000

// ErrSubmission matches the error of a submission refused for its
// content: an unknown job, a bad dedupe key, no items, too many, a bad
// item name, a name listed twice or a payload over baton.MaxPayload.
var ErrSubmission = errors.New("bad submission")

// Submission is work submitted on demand for a job: a dedupe key and the
// items of the run it opens, each with an optional payload.
type Submission struct {
	Job string
	// Key is the dedupe key, a name as baton.ValidName defines it: the
	// run's id is job+key#generation.
	Key   string
	Items []baton.Item // any order; at most MaxSubmissionItems
	// Class, optional, is the priority class of the submission: a job
	// queue of the catalog (baton.JobQueue), its items sent there instead
	// of to the job's own queue, so that they are served with that class's
	// consumers (its concurrency share). "": the job's queue. A class
	// submission's items always go out as item messages (never as page
	// shards, whatever its size or the job's Bulk), so that every one of
	// them is sent to the class's queue.
	Class string
	// Deadline is the invocation's deadline; zero: none besides ctx.
	Deadline time.Time
}

// Submit opens the run of a submission and fans it out, or finds it: the
// same dedupe key within the job's retention (baton.Job.Retention) of its
// run's finish opens nothing new and returns that run (Summary.Deduped);
// past it, the key's next generation opens. A submission's items are
// stored with its run in pages (as a run-time list's are) before they are
// sent, so that consumers check them and read their payloads as they do a
// run-time list's, and the run goes through the same ledger, claims,
// settling, status and dead-letter queue as a tick's. The job's derived
// items do not run for a submission.
//
// Submit holds the lease of job+key (not the job's: ticks and other
// submissions go on) while it opens and fans out. A concurrent Submit of
// the same key waits for that lease's holder (polling with backoff, up to
// ContentionWait, never past the deadline) and answers with its run once
// fanned out (Deduped); a holder whose lease expires meanwhile died, and
// the waiter takes over its fan-out. A holder still busy at the end of
// the wait gives OutcomeSkipped with Deduped and its run (being fanned
// out), or, when it has not opened the run yet, OutcomeSkipped with
// Pending, to be retried. A fan-out stopped part-way (deadline, crash) is
// resumed by the next Submit of the same key, from the stored pages.
func (c *Coordinator) Submit(ctx context.Context, s Submission) (Summary, error) {
	j, items, err := c.checkSubmission(s)
	if err != nil {
		return Summary{Job: s.Job}, err
	}
	var to queue.Sender
	if s.Class != "" {
		to = c.Classes[s.Class] // checkSubmission checked it
	}
	list := make([]ledger.PageItem, len(items))
	for i, it := range items {
		list[i] = ledger.PageItem{Name: it.Name, Payload: it.Payload}
	}
	return c.submitRun(ctx, submitParams{job: j, key: s.Key, items: baton.ItemList(ledger.PageItems*16, items...), deadline: s.Deadline, queue: to, size: len(items),
		digest: ledger.DigestItems(list)})
}

// submitParams are the inputs of submitRun.
type submitParams struct {
	job      baton.Job
	key      string
	items    baton.ItemsFunc
	parent   ledger.RunID // a chain's finished run; zero: none
	deadline time.Time
	// once opens the key's run at most once, whatever the retention (a
	// chain: once per finished run).
	once bool
	// replay opens the key's next generation whatever the retention (a
	// replay of a finished submission).
	replay bool
	// replayOf, with replay, is the generation replayed: found otherwise
	// once the key's lease is held, another caller replayed (or opened)
	// the key meanwhile, and the call answers with its run.
	replayOf int
	// queue, when set, is where the items go (a submission's class).
	queue queue.Sender
	// size is the list's size when known (a submission's items, a
	// replayed run's), which fixes the run's item partitions (see
	// openShards); 0: not known (a chain's items function), the job's
	// ExpectedItems does.
	size int
	// digest names the items (ledger.DigestItems) when they are known
	// whole (a submission's; a replay's, the replayed run's): kept with
	// the run it opens, and compared with a found run's.
	digest string
}

// submitRun opens (or finds, or resumes) the run of job+key and fans its
// items out. Without a lease store (Leases nil: a consumer starting a
// chain, which holds no lease) it opens and sends under fence 0: only the
// settler that finished the parent starts a chain (see the package doc),
// and should two callers still overlap both may send, which claims
// absorb; the stored pages, written once, keep one list. With one, a
// caller that finds the key's lease held waits for its holder (see
// Submit).
func (c *Coordinator) submitRun(ctx context.Context, p submitParams) (sum Summary, err error) {
	kind := "submit"
	if p.parent.Job != "" {
		kind = "chain"
	}
	ctx, span := c.startInvocation(ctx, kind, p.job.Name)
	defer func() { c.endInvocation(ctx, span, &sum, err) }()
	start := c.now()
	j := p.job
	sum = Summary{Job: j.Name}
	if c.Owner == "" {
		return sum, fmt.Errorf("submit %s+%s: coordinator has no owner", j.Name, p.key)
	}
	id := ledger.RunID{Job: j.Name, Submission: p.key, Generation: 1}
	t := &tickRun{tr: Trigger{Job: j.Name, Deadline: p.deadline}, start: start, sum: &sum, job: j,
		owner: fmt.Sprintf("%s#%d", c.Owner, invocations.Add(1)), items: p.items, parent: p.parent, queue: p.queue}
	t.log = c.logger().With(slog.String("job", j.Name), slog.String("submission", p.key), slog.String("owner", t.owner))

	ttl := c.ttl(j.Limits, start, p.deadline)
	if ttl <= 0 {
		return sum, fmt.Errorf("submit %s: %w", jobspec.TickKey(id), ErrNoTime)
	}
	force := p.replay
	var fence int64
	if c.Leases == nil {
		found, done, err := c.findSubmitted(ctx, t, p, id)
		if done || err != nil {
			return sum, err
		}
		force = force || found
		t.hold = &holding{lease: lease.Lease{Job: jobspec.TickKey(id), Owner: t.owner}, ttl: ttl, renewed: start, unleased: true}
	} else {
		// A live holder of job+key is another caller opening or fanning
		// out this very submission: wait for it (with backoff, up to the
		// contention wait), then answer with its run; a holder whose
		// lease expires meanwhile died, and this call takes over.
		until := start.Add(c.contentionWait())
		if end := p.deadline.Add(-j.Limits.DeadlineMargin); !p.deadline.IsZero() && end.Before(until) {
			until = end
		}
		for pause := contentionFirstPause; ; pause = min(2*pause, contentionMaxPause) {
			found, done, err := c.findSubmitted(ctx, t, p, id)
			if done || err != nil {
				return sum, err
			}
			force = p.replay || found
			now := c.now()
			ttl = c.ttl(j.Limits, now, p.deadline)
			if ttl <= 0 {
				return sum, fmt.Errorf("submit %s: %w", jobspec.TickKey(id), ErrNoTime)
			}
			l, err := c.Leases.Acquire(ctx, lease.AcquireParams{Job: jobspec.TickKey(id), Owner: t.owner, TTL: ttl, Now: now, Skew: j.Limits.ClockSkew})
			var held *lease.HeldError
			if errors.As(err, &held) {
				if now.Add(pause).Before(until) {
					if err := c.sleep(ctx, pause, until.Sub(now)); err != nil {
						return sum, fmt.Errorf("submit %s: waiting for the caller opening it: %w", jobspec.TickKey(id), err)
					}
					continue
				}
				return c.answerBusy(ctx, t, p, id, held.Holder)
			}
			if err != nil {
				return sum, fmt.Errorf("submit %s: acquire lease: %w", jobspec.TickKey(id), err)
			}
			fence = l.Fence
			t.hold = &holding{lease: l, ttl: ttl, renewed: now}
			t.log = t.log.With(slog.Int64("fence", l.Fence))
			defer c.finish(ctx, t)
			break
		}
		if p.replay && p.replayOf > 0 {
			// Under the key's lease nobody else opens it: a replay that
			// waited for another caller must not open yet another
			// generation when that one was a replay too.
			run, err := ledger.GetRunOf(ctx, c.Ledger, id)
			if err != nil {
				return sum, fmt.Errorf("submit %s: read run: %w", jobspec.TickKey(id), err)
			}
			if run.ID.Generation != p.replayOf {
				c.deduped(ctx, t, p, run)
				sum.Outcome = OutcomeAlreadyFannedOut
				if run.State == ledger.RunFanningOut {
					sum.Outcome = OutcomeSkipped // left fanning out: the key's next submission resumes it
				}
				t.log.InfoContext(ctx, "submission replayed by another caller meanwhile", slog.String("phase", "open"),
					slog.Int("replayed", p.replayOf), slog.String("run", run.ID.String()))
				return sum, nil
			}
		}
	}
	sum.Fence = fence

	run, outcome, err := c.Ledger.OpenRun(ctx, ledger.OpenRunParams{Job: j.Name, Submission: p.key, Fence: fence, Force: force, Now: c.now(),
		Shards: pagesOf(cmp.Or(p.size, j.ExpectedItems)), Pages: true, Digest: p.digest, TraceID: telemetry.TraceID(ctx)})
	if err != nil {
		return sum, fmt.Errorf("submit %s: open: %w", jobspec.TickKey(id), err)
	}
	sum.Run, sum.Cursor, sum.Outcome = run.ID, run.Cursor, RunOutcome(outcome)
	t.log = t.log.With(slog.String("run", run.ID.String()))
	if outcome == ledger.AlreadyFannedOut {
		c.deduped(ctx, t, p, run)
		sum.Outcome = OutcomeAlreadyFannedOut
		return sum, nil
	}
	if outcome == ledger.Resumed && ledger.DigestsDiffer(run.Digest, p.digest) {
		// Another list's run, left fanning out: its stored pages and these
		// items must not be mixed. A submission of its own items resumes it.
		c.deduped(ctx, t, p, run)
		t.log.WarnContext(ctx, "submission's items differ from its key's run left fanning out; not resumed with them", slog.String("phase", "open"))
		return sum, nil
	}
	t.log.InfoContext(ctx, "submission opened", slog.String("phase", "open"), slog.String("outcome", string(outcome)))
	return sum, c.tracedFanOut(ctx, t, run)
}

// Contention wait defaults (Coordinator.ContentionWait): a submission
// that finds its key's lease held polls with a pause that starts at
// contentionFirstPause and doubles up to contentionMaxPause.
const (
	DefaultContentionWait = 5 * time.Second
	contentionFirstPause  = 20 * time.Millisecond
	contentionMaxPause    = 500 * time.Millisecond
)

func (c *Coordinator) contentionWait() time.Duration {
	switch {
	case c.ContentionWait < 0:
		return 0
	case c.ContentionWait == 0:
		return DefaultContentionWait
	}
	return c.ContentionWait
}

// sleep pauses for d and up to half as long again (jitter, so that
// waiters on one key do not poll in step), never longer than limit, or
// until ctx ends.
func (c *Coordinator) sleep(ctx context.Context, d, limit time.Duration) error {
	d = min(d+rand.N(d/2+1), limit)
	if c.SleepFunc != nil {
		return c.SleepFunc(ctx, d)
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// findSubmitted reads the run of the submission id: done when that run
// answers the call (fanned out, or finished within the job's retention:
// t.sum says deduped); next when the key's next generation is due (a
// replay, or a run finished longer than the retention ago); neither when
// there is no run yet or it is still fanning out.
func (c *Coordinator) findSubmitted(ctx context.Context, t *tickRun, p submitParams, id ledger.RunID) (next, done bool, err error) {
	if p.replay {
		return true, false, nil
	}
	run, err := ledger.GetRunOf(ctx, c.Ledger, id)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return false, false, nil
	case err != nil:
		return false, false, fmt.Errorf("submit %s: read run: %w", jobspec.TickKey(id), err)
	case !p.once && run.State.Finished() && !t.start.Before(run.FinishedAt.Add(jobspec.Retention(p.job))):
		return true, false, nil // finished longer than the retention ago: the key's next generation
	case run.State == ledger.RunFanningOut && !ledger.DigestsDiffer(run.Digest, p.digest):
		return false, false, nil
	}
	// Fanned out or finished; or fanning out with other items, which this
	// call neither waits for nor resumes (its items are not used).
	c.deduped(ctx, t, p, run)
	t.sum.Outcome = OutcomeAlreadyFannedOut
	return false, true, nil
}

// deduped answers a submission with the key's existing run, saying
// whether that run was opened with other items (PayloadDiffers).
func (c *Coordinator) deduped(ctx context.Context, t *tickRun, p submitParams, run ledger.Run) {
	sum := t.sum
	sum.Run, sum.Deduped = run.ID, true
	sum.PayloadDiffers = ledger.DigestsDiffer(run.Digest, p.digest)
	sum.Cursor, sum.Total = run.Cursor, run.Total
	if run.State != ledger.RunFanningOut {
		sum.Cursor = run.Total
	}
	t.log.InfoContext(ctx, "submission deduped", slog.String("run", run.ID.String()), slog.String("state", string(run.State)),
		slog.Bool("payload_differs", sum.PayloadDiffers))
}

// answerBusy answers a submission whose key's lease another caller still
// holds at the end of the contention wait: with that caller's run when it
// has opened one (OutcomeSkipped with Deduped: the run exists, and its
// holder is fanning it out), else OutcomeSkipped with Pending (the holder
// has not opened the run yet, or the call is a replay: retry).
func (c *Coordinator) answerBusy(ctx context.Context, t *tickRun, p submitParams, id ledger.RunID, holder lease.Lease) (Summary, error) {
	sum := t.sum
	sum.Outcome, sum.Holder = OutcomeSkipped, &holder
	run, err := ledger.GetRunOf(ctx, c.Ledger, id)
	switch {
	case p.replay || errors.Is(err, ledger.ErrNotFound):
		sum.Pending = true
		return *sum, nil
	case err != nil:
		return *sum, fmt.Errorf("submit %s: read run: %w", jobspec.TickKey(id), err)
	}
	c.deduped(ctx, t, p, run)
	return *sum, nil
}

// ErrReplayInFlight matches ReplaySubmission's error for a submission
// whose latest run has not finished: wait for it, or cancel it.
var ErrReplayInFlight = errors.New("submission's run not finished")

// ReplaySubmission opens the next generation of the submission job+key,
// whose latest run must be finished, with the items (and payloads) stored
// with that run, and fans it out: a forced replay of a submitted run, as
// 'replay tick --force' is a tick's. The new generation carries the
// stored parent of a chained run. Its items run again from their first
// attempt (a generation's items are its own); the earlier generation's
// records stay, as a tick's do. A submission never opened is refused
// with an error matching ledger.ErrNotFound, one still running with
// ErrReplayInFlight. A concurrent replay or submission of the same key is
// waited for (as Submit does); when that other caller opened the key's
// next generation meanwhile, nothing more is opened and the call answers
// with that run (Deduped); a caller still holding the key at the end of
// the wait gives OutcomeSkipped with Pending.
func (c *Coordinator) ReplaySubmission(ctx context.Context, job, key string, deadline time.Time) (Summary, error) {
	j, err := c.Jobs.Lookup(job)
	if err != nil {
		return Summary{Job: job}, fmt.Errorf("%w: %w", ErrSubmission, err)
	}
	if err := baton.ValidName("submission", key); err != nil {
		return Summary{Job: job}, fmt.Errorf("%w: job %s: dedupe key: %w", ErrSubmission, job, err)
	}
	id := ledger.RunID{Job: job, Submission: key}
	run, err := ledger.GetRunOf(ctx, c.Ledger, id)
	if err != nil {
		return Summary{Job: job}, fmt.Errorf("replay %s: %w", jobspec.TickKey(id), err)
	}
	if !run.State.Finished() {
		return Summary{Job: job, Run: run.ID}, fmt.Errorf("replay %s: run %s is %s: %w", jobspec.TickKey(id), run.ID, run.State, ErrReplayInFlight)
	}
	first, err := c.Ledger.GetPage(ctx, run.ID, 0)
	if err != nil {
		return Summary{Job: job, Run: run.ID}, fmt.Errorf("replay %s: the stored list of %s: %w", jobspec.TickKey(id), run.ID, err)
	}
	var parent ledger.RunID
	if first.Parent != "" {
		if parent, err = ledger.ParseRunID(first.Parent); err != nil {
			return Summary{Job: job, Run: run.ID}, fmt.Errorf("replay %s: the stored parent of %s: %w", jobspec.TickKey(id), run.ID, err)
		}
	}
	return c.submitRun(ctx, submitParams{job: j, key: key, items: storedItems(c.Ledger, run.ID), parent: parent, deadline: deadline, replay: true, replayOf: run.ID.Generation,
		size: run.Total, digest: run.Digest})
}

// storedItems serves the item list stored with run, page by page (the
// cursor is the next page's index): the list a replay sends again.
func storedItems(l ledger.Store, run ledger.RunID) baton.ItemsFunc {
	return func(ctx context.Context, req baton.ItemsRequest) (baton.ItemsPage, error) {
		index := 0
		if req.Cursor != "" {
			n, err := strconv.Atoi(req.Cursor)
			if err != nil || n < 1 {
				return baton.ItemsPage{}, fmt.Errorf("stored list of %s: bad cursor %q", run, req.Cursor)
			}
			index = n
		}
		pg, err := l.GetPage(ctx, run, index)
		if err != nil {
			return baton.ItemsPage{}, fmt.Errorf("stored list of %s: page %d: %w", run, index, err)
		}
		out := baton.ItemsPage{Items: make([]baton.Item, len(pg.Items))}
		for i, it := range pg.Items {
			out.Items[i] = baton.Item{Name: it.Name, Payload: it.Payload}
		}
		if !pg.Final {
			out.Next = strconv.Itoa(index + 1)
		}
		return out, nil
	}
}

// checkSubmission resolves the submission's job and returns its items
// sorted by name, refusing what cannot be run with an error naming it.
func (c *Coordinator) checkSubmission(s Submission) (baton.Job, []baton.Item, error) {
	j, err := c.Jobs.Lookup(s.Job)
	if err != nil {
		return j, nil, fmt.Errorf("%w: %w", ErrSubmission, err)
	}
	if err := baton.ValidName("submission", s.Key); err != nil {
		return j, nil, fmt.Errorf("%w: job %s: dedupe key: %w", ErrSubmission, j.Name, err)
	}
	if _, ok := c.Classes[s.Class]; s.Class != "" && !ok {
		names := make([]string, 0, len(c.Classes))
		for n := range c.Classes {
			names = append(names, n)
		}
		slices.Sort(names)
		return j, nil, fmt.Errorf("%w: %s+%s: class %q is not a job queue of the catalog (classes: %v)", ErrSubmission, j.Name, s.Key, s.Class, names)
	}
	switch {
	case len(s.Items) == 0:
		return j, nil, fmt.Errorf("%w: %s+%s: no items", ErrSubmission, j.Name, s.Key)
	case len(s.Items) > MaxSubmissionItems:
		return j, nil, fmt.Errorf("%w: %s+%s: %d items, at most %d (a larger list belongs in the job's Items function)",
			ErrSubmission, j.Name, s.Key, len(s.Items), MaxSubmissionItems)
	}
	items := slices.Clone(s.Items)
	slices.SortFunc(items, func(a, b baton.Item) int { return strings.Compare(a.Name, b.Name) })
	for i, it := range items {
		if err := baton.ValidName("item", it.Name); err != nil {
			return j, nil, fmt.Errorf("%w: %s+%s: %w", ErrSubmission, j.Name, s.Key, err)
		}
		if i > 0 && items[i-1].Name == it.Name {
			return j, nil, fmt.Errorf("%w: %s+%s: item %q listed twice", ErrSubmission, j.Name, s.Key, it.Name)
		}
		if len(it.Payload) > baton.MaxPayload {
			return j, nil, fmt.Errorf("%w: %s+%s: item %q: payload of %d bytes, at most %d (baton.MaxPayload)",
				ErrSubmission, j.Name, s.Key, it.Name, len(it.Payload), baton.MaxPayload)
		}
	}
	return j, items, nil
}
