package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/limitstatus"
	"github.com/batonhq/baton/internal/ops"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/schedule"
)

const statusSynopsis = `status [--job J] [--run R] [--json] [flags]

Shows every job of the catalog, one section each (--job J: that job
alone); for each job: the lease (holder, fence, expiry, how often an
acquisition was refused); the recent runs with their item counts per state;
the recent submissions (runs opened by 'baton submit', newest first); per
asset the latest tick that succeeded and its staleness; items stuck
RUNNING past their lease; the items waiting for their next attempt (a
retry delay, or a busy limit key: the time, what on, the last error);
each rate limit's hottest keys now (starts in the current window, slots
held and by which items, waiters); the depth of the work and dead-letter
queues.
With --run, the items of that run instead of the overview, each with its
result (a SUCCEEDED item's: its first line in the table; with --json up
to 1 KiB of it, secrets masked, or its size when it is not text).

Staleness is the time from the nominal time of the asset's latest
successful tick to now: how old the newest data is. PENDING counts items of
a run that have no record yet (not claimed, or their message not sent).
An item is stuck when it is RUNNING and its lease ended more than the job's
clock-skew allowance ago: its worker died; the redelivered message (or
'baton replay item') takes it over with the next attempt. Stuck items are
looked for in every unfinished run among the --history newest, not only in
the --runs listed.

--json prints the same as one JSON object, for scripts: the job's report
when one job is shown (--job, --run, or a catalog of one job), else
{"backend", "store", "now", "jobs": [one report per job]}. It reads only.`

type statusFlags struct {
	common  *backendFlags
	run     string
	runs    int
	history int
}

func statusCommand() command {
	return command{synopsis: statusSynopsis, summary: "show leases, recent runs, item states and staleness",
		example: "  baton status\n  baton status --job fx --json\n  baton status --run fx@2026-11-21T12:01:00Z#1\n  baton status --backend aws --json",
		backend: true, defineFunc: defineStatus}
}

func defineStatus(e *env, fs *pflag.FlagSet) runFunc {
	f := statusFlags{common: &e.backend}
	fs.StringVar(&f.run, "run", "", "show this run's items (a run id such as fx@2026-11-21T12:01:00Z#1)")
	fs.IntVar(&f.runs, "runs", 10, "recent runs to list")
	fs.IntVar(&f.history, "history", 100, "runs to scan for each asset's latest success and for stuck items")
	return func(ctx context.Context, _ []string) error { return status(ctx, e, fs, &f) }
}

func status(ctx context.Context, e *env, fs *pflag.FlagSet, f *statusFlags) error {
	if f.runs < 1 || f.history < 1 {
		return usagef("--runs and --history must be at least 1")
	}
	var (
		jobs  []baton.Job
		runID ledger.RunID
	)
	switch {
	case f.run != "":
		id, j, err := parseRun(e.catalog, f.run)
		if err != nil {
			return err
		}
		if given(fs, "job") && f.common.job != id.Job {
			return usagef("--job %s and --run %s name different jobs", f.common.job, f.run)
		}
		runID, jobs = id, []baton.Job{j}
	case f.common.job != "":
		j, err := lookupJob(e.catalog, f.common.job)
		if err != nil {
			return err
		}
		jobs = []baton.Job{j}
	default:
		// No --job: every job of the catalog, one section each.
		jobs = e.catalog.Jobs()
	}
	b, err := f.common.openReadOnly(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	now := time.Now().UTC()
	reps := make([]statusReport, 0, len(jobs))
	for _, j := range jobs {
		rep, err := buildStatus(ctx, b, j, statusParams{Run: runID, Runs: f.runs, History: f.history, Now: now})
		if err != nil {
			return err
		}
		rep.Store = f.common.where()
		reps = append(reps, rep)
	}
	if e.json {
		if len(reps) == 1 {
			e.custom = reps[0]
		} else {
			e.custom = catalogStatus{Backend: b.Name, Store: f.common.where(), Now: now, Jobs: reps}
		}
		return nil
	}
	var out strings.Builder
	for i, rep := range reps {
		if len(reps) > 1 {
			if i > 0 {
				out.WriteString("\n")
			}
			fmt.Fprintf(&out, "=== job %s (%d of %d; --job %s shows it alone)\n", rep.Job, i+1, len(reps), rep.Job)
		}
		printStatus(&out, rep)
	}
	fmt.Fprint(e.stdout, e.named(out.String()))
	return nil
}

// catalogStatus is status's --json report without --job (or --run) for a
// catalog of several jobs: each job's report, in name order.
type catalogStatus struct {
	Backend string         `json:"backend"`
	Store   string         `json:"store"`
	Now     time.Time      `json:"now"`
	Jobs    []statusReport `json:"jobs"`
}

// statusReport is what status prints; its JSON form is the --json output.
type statusReport struct {
	Job      string       `json:"job"`
	Schedule string       `json:"schedule"` // "": none (on demand, or by a chain)
	Backend  string       `json:"backend"`
	Store    string       `json:"store"`
	Now      time.Time    `json:"now"`
	Lease    *leaseStatus `json:"lease"` // null: the job never took its lease
	// Pause is the job's pause record; null when the job was never paused
	// or the backend cannot pause jobs.
	Pause *pauseStatus `json:"pause,omitempty"`
	Runs  []runStatus  `json:"runs,omitempty"`
	// Submissions are the job's submitted runs (the current generation
	// of each dedupe key), newest opened first, at most --runs: read
	// from their run records only (counts once finished). Null when the
	// backend cannot list them.
	Submissions []submissionStatus `json:"submissions,omitempty"`
	// Gaps are the schedule's ticks, among the listed runs' span, that have
	// no run: skipped by the job's catch-up policy, waiting to be caught
	// up, or missed.
	Gaps   []tickGap     `json:"ticks_without_run,omitempty"`
	Assets []assetStatus `json:"assets,omitempty"`
	Stuck  []itemStatus  `json:"stuck,omitempty"`
	// Waiting are the items waiting for their next attempt (a retry
	// delay, or given back by a busy limit key), soonest first, at most
	// maxWaiting; WaitingMore counts the others. Among the runs read.
	Waiting     []itemStatus `json:"waiting,omitempty"`
	WaitingMore int          `json:"waiting_more,omitempty"`
	// Limits are the job's rate limits now: each one's hottest keys
	// (starts in the current window, slots held and by which items,
	// waiters); see package limitstatus.
	Limits []limitstatus.Limit `json:"limits,omitempty"`
	Run    *runDetail          `json:"run,omitempty"` // with --run
	Queues []queueStatus       `json:"queues"`
	// Retention says what is kept of the job's finished runs and for how
	// long.
	Retention retentionStatus `json:"retention"`
}

// retentionStatus is what status says of retention.
type retentionStatus struct {
	// Seconds is the job's Retention: finished runs are kept at least
	// this long after they finish, and a submission's dedupe key holds
	// for as long.
	Seconds float64 `json:"seconds"`
	// How says how the backend removes them after it.
	How string `json:"how"`
}

type pauseStatus struct {
	Paused      bool       `json:"paused"`
	Since       time.Time  `json:"since"`
	Until       *time.Time `json:"until,omitempty"` // null while paused
	By          string     `json:"by"`
	Reason      string     `json:"reason,omitempty"`
	Skipped     int64      `json:"skipped_ticks"`
	LastSkipped *time.Time `json:"last_skipped,omitempty"`
}

func newPauseStatus(p lease.Pause) *pauseStatus {
	if p.Since.IsZero() {
		return nil
	}
	return &pauseStatus{Paused: p.Paused, Since: p.Since.UTC(), Until: opt(p.Until), By: p.By, Reason: p.Reason,
		Skipped: p.Skipped, LastSkipped: opt(p.LastSkipped)}
}

// readPause returns the job's pause record, nil when the backend has no
// pause ability or the job was never paused.
func readPause(ctx context.Context, b backend.Backend, job string) (*pauseStatus, error) {
	pauser, ok := lease.PauserOf(b.Leases)
	if !ok {
		return nil, nil
	}
	p, err := pauser.PauseOf(ctx, job)
	if err != nil {
		return nil, fmt.Errorf("pause of %s: %w", job, err)
	}
	return newPauseStatus(p), nil
}

type tickGap struct {
	Tick   time.Time `json:"tick"`
	Reason string    `json:"reason"` // skipped, catch-up pending or missed
}

// maxGaps bounds the ticks without a run status lists.
const maxGaps = 100

// tickGaps returns the schedule's ticks from the oldest run listed to the
// latest tick at or before now that have no run, newest first, with why.
func tickGaps(j baton.Job, runs []ledger.Run, pause *pauseStatus, now time.Time) []tickGap {
	sched, err := schedule.ParseIn(j.Schedule, j.TimeZone)
	if err != nil || len(runs) == 0 {
		return nil
	}
	has := make(map[int64]bool, len(runs))
	for _, r := range runs {
		has[r.ID.Nominal.Unix()] = true
	}
	oldest, latest := runs[len(runs)-1].ID.Nominal, sched.Prev(now)
	var gaps []tickGap
	for at := latest; !at.IsZero() && at.After(oldest) && len(gaps) < maxGaps; at = sched.Prev(at.Add(-time.Nanosecond)) {
		if has[at.Unix()] {
			continue
		}
		reason := "missed"
		if pause != nil && !at.Before(sched.Prev(pause.Since)) && (pause.Until == nil || !at.After(*pause.Until)) {
			gaps = append(gaps, tickGap{Tick: at, Reason: "skipped (paused)"})
			continue
		}
		if cu := j.CatchUp; cu.Window > 0 && !at.Before(latest.Add(-cu.Window)) {
			reason = "catch-up pending"
			if cu.Skip {
				reason = "skipped (catch-up policy)"
			}
		}
		gaps = append(gaps, tickGap{Tick: at, Reason: reason})
	}
	return gaps
}

type leaseStatus struct {
	Owner      string     `json:"owner"` // "" when free
	Fence      int64      `json:"fence"`
	State      string     `json:"state"` // held, expired or free
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
	AcquiredAt *time.Time `json:"acquired_at,omitempty"`
	// Contention is null when the backend does not count refusals.
	Contention *contentionStatus `json:"contention"`
}

type contentionStatus struct {
	Count       int64      `json:"count"`
	Last        *time.Time `json:"last,omitempty"`
	LastHolder  string     `json:"last_holder,omitempty"`
	LastFence   int64      `json:"last_fence,omitempty"`
	LastExpires *time.Time `json:"last_holder_expires_at,omitempty"`
}

type runStatus struct {
	ID         string     `json:"id"`
	Nominal    time.Time  `json:"nominal"`
	Generation int        `json:"generation"`
	State      string     `json:"state"`
	Cursor     int        `json:"cursor"`
	Total      int        `json:"total"`
	Fence      int64      `json:"fence"`
	OpenedAt   time.Time  `json:"opened_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// Items counts the run's items per state (RUNNING, FAILED, SUCCEEDED,
	// DEAD, CANCELLED) and PENDING: expected items without a record.
	Items map[string]int `json:"items"`
	// Superseded counts the items of the tick's earlier generations that a
	// forced replay cut short: a message of theirs arrived after the replay
	// and was acknowledged as superseded (see internal/consumer).
	Superseded int `json:"superseded"`
}

// submissionStatus is one submitted run in the overview.
type submissionStatus struct {
	ID         string     `json:"id"`
	Key        string     `json:"key"`
	Generation int        `json:"generation"`
	State      string     `json:"state"`
	Total      int        `json:"total"` // items sent; set once fanned out
	OpenedAt   time.Time  `json:"opened_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Succeeded  int        `json:"succeeded"`
	Dead       int        `json:"dead"`
	Cancelled  int        `json:"cancelled"`
}

type assetStatus struct {
	Asset string `json:"asset"`
	// LastSuccess is the nominal time of the latest scanned tick whose item
	// SUCCEEDED; null when none of the scanned runs has one.
	LastSuccess      *time.Time `json:"last_success"`
	Run              string     `json:"run,omitempty"`
	FinishedAt       *time.Time `json:"finished_at,omitempty"`
	StalenessSeconds *float64   `json:"staleness_seconds"`
}

type itemStatus struct {
	Key        string     `json:"key"`
	Asset      string     `json:"asset"`
	State      string     `json:"state"` // PENDING when there is no record
	Owner      string     `json:"owner,omitempty"`
	Attempt    int        `json:"attempt"`
	Fence      int64      `json:"fence,omitempty"`
	LeaseUntil *time.Time `json:"lease_until,omitempty"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Error      string     `json:"error,omitempty"`
	// Result is a SUCCEEDED item's result as text, bounded like a dead
	// letter's reason (ledger.PreviewResult: at most 1 KiB, secrets
	// masked; ResultTruncated when cut); absent for a binary result
	// (ResultBinary), whose size alone is given. ResultBytes is the whole
	// result's size.
	Result          string `json:"result,omitempty"`
	ResultBytes     int    `json:"result_bytes,omitempty"`
	ResultTruncated bool   `json:"result_truncated,omitempty"`
	ResultBinary    bool   `json:"result_binary,omitempty"`
	// OverdueSeconds is, for a stuck item, how long ago its lease ended.
	OverdueSeconds float64 `json:"overdue_seconds,omitempty"`
	// NextAttempt is, for an item waiting (FAILED, its message handed
	// back delayed), the earliest time of its next attempt; WaitingOn
	// says what for. Absent when none was noted (records of earlier
	// versions, a queue that cannot delay a message).
	NextAttempt *time.Time `json:"next_attempt,omitempty"`
	WaitingOn   *waitingOn `json:"waiting_on,omitempty"`
}

// waitingOn is what a waiting item waits for: a retry delay after a
// failed attempt (its error is the item's), or a busy key of a limit.
type waitingOn struct {
	Kind  string `json:"kind"`            // retry_delay or limit
	Limit string `json:"limit,omitempty"` // the limit's name (kind limit)
	Key   string `json:"key,omitempty"`   // its key, for a keyed limit
}

// maxWaiting bounds the waiting items the overview lists.
const maxWaiting = 20

type runDetail struct {
	runStatus
	Current      bool         `json:"current"` // false: an older generation of the tick
	ItemList     []itemStatus `json:"item_list"`
	SupersededBy string       `json:"superseded_by,omitempty"`
}

type queueStatus struct {
	Role        string `json:"role"` // work, job:<queue name> or dead_letter
	Visible     int    `json:"visible"`
	InFlight    int    `json:"in_flight"`
	Delayed     int    `json:"delayed"`
	Approximate bool   `json:"approximate"`
	Error       string `json:"error,omitempty"` // why the depth is unknown
}

// pending is the state status reports for an expected item without a record.
const pending = "PENDING"

type statusParams struct {
	Run  ledger.RunID // zero: the overview
	Runs int          // recent runs listed
	// History bounds the runs scanned for last successes and stuck items;
	// past Runs, only unfinished runs are read once every asset has its
	// latest success.
	History int
	Now     time.Time
}

// buildStatus reads everything status shows. It writes nothing.
func buildStatus(ctx context.Context, b backend.Backend, j baton.Job, p statusParams) (statusReport, error) {
	rep := statusReport{Job: j.Name, Schedule: j.Schedule, Backend: b.Name, Now: p.Now,
		Retention: retentionStatus{Seconds: jobspec.Retention(j).Seconds(), How: b.Retention}}
	var err error
	if rep.Lease, err = readLease(ctx, b, j.Name, j.Limits.ClockSkew, p.Now); err != nil {
		return rep, err
	}
	if rep.Pause, err = readPause(ctx, b, j.Name); err != nil {
		return rep, err
	}
	rep.Queues = readQueues(ctx, b, j)
	if !p.Run.Nominal.IsZero() || p.Run.Submitted() {
		rep.Run, err = readRun(ctx, b.Ledger, j, p.Run, p.Now)
		return rep, err
	}

	runs, err := b.Ledger.ListRuns(ctx, ledger.ListRunsParams{Job: j.Name, Limit: max(p.Runs, p.History)})
	if err != nil {
		return rep, fmt.Errorf("list runs of %s: %w", j.Name, err)
	}
	listed := runs[:min(len(runs), p.Runs)]
	if lister, ok := b.Ledger.(ledger.SubmissionLister); ok {
		subs, err := lister.ListSubmissions(ctx, ledger.ListSubmissionsParams{Job: j.Name, Limit: p.Runs})
		if err != nil {
			return rep, err
		}
		rep.Submissions = []submissionStatus{}
		for _, r := range subs {
			rep.Submissions = append(rep.Submissions, submissionStatus{ID: r.ID.String(), Key: r.ID.Submission, Generation: r.ID.Generation,
				State: string(r.State), Total: r.Total, OpenedAt: r.OpenedAt.UTC(), FinishedAt: opt(r.FinishedAt),
				Succeeded: r.Succeeded, Dead: r.Dead, Cancelled: r.Cancelled})
		}
	}
	rep.Gaps = tickGaps(j, listed, rep.Pause, p.Now)
	expected := exec.SortedItemNames(j)
	last := map[string]ledger.Item{}
	var waiting []ledger.Item
	rep.Runs, rep.Stuck = []runStatus{}, []itemStatus{}
	for i, run := range runs {
		if i >= p.Runs && len(last) == len(expected) && run.State.Finished() {
			// Listed enough runs, every asset has its latest success, and
			// a finished run holds no stuck item (every item is terminal):
			// nothing to read. Unfinished runs further back still may.
			continue
		}
		items, err := b.Ledger.ListItems(ctx, run.ID)
		if err != nil {
			return rep, fmt.Errorf("list items of %s: %w", run.ID, err)
		}
		if i < p.Runs {
			rs := newRunStatus(run, items, expected)
			if rs.Superseded, err = countSuperseded(ctx, b.Ledger, run.ID); err != nil {
				return rep, err
			}
			rep.Runs = append(rep.Runs, rs)
		}
		for _, it := range items {
			if _, seen := last[it.Key.Asset]; !seen && it.State == ledger.ItemSucceeded {
				last[it.Key.Asset] = it
			}
			if stuck(it, j.Limits.ClockSkew, p.Now) {
				s := newItemStatus(it)
				s.OverdueSeconds = p.Now.Sub(it.LeaseUntil).Seconds()
				rep.Stuck = append(rep.Stuck, s)
			}
			if _, ok := it.NextAttempt(); ok {
				waiting = append(waiting, it)
			}
		}
	}
	rep.Waiting, rep.WaitingMore = waitingItems(waiting)
	if len(j.RateLimits) > 0 {
		rep.Limits = limitstatus.Read(ctx, limitstatus.Params{Job: j, Store: b.RateLimits, Items: waiting, Now: p.Now})
	}
	for _, name := range expected {
		a := assetStatus{Asset: name}
		if it, ok := last[name]; ok {
			nominal, finished := it.Key.Run.Nominal.UTC(), it.FinishedAt.UTC()
			stale := p.Now.Sub(nominal).Seconds()
			a.LastSuccess, a.Run, a.FinishedAt, a.StalenessSeconds = &nominal, it.Key.Run.String(), &finished, &stale
		}
		rep.Assets = append(rep.Assets, a)
	}
	return rep, nil
}

// waitingItems returns the items of items, which wait for their next
// attempt, soonest first, at most maxWaiting, and how many are left out.
func waitingItems(items []ledger.Item) ([]itemStatus, int) {
	sorted := slices.Clone(items)
	slices.SortFunc(sorted, func(a, b ledger.Item) int {
		if c := a.Wait.At.Compare(b.Wait.At); c != 0 {
			return c
		}
		return strings.Compare(a.Key.String(), b.Key.String())
	})
	more := max(0, len(sorted)-maxWaiting)
	sorted = sorted[:len(sorted)-more]
	out := make([]itemStatus, 0, len(sorted))
	for _, it := range sorted {
		out = append(out, newItemStatus(it))
	}
	return out, more
}

// stuck reports whether it is RUNNING with a lease that ended more than
// skew ago (a claim by anyone else would succeed).
func stuck(it ledger.Item, skew time.Duration, now time.Time) bool {
	return it.State == ledger.ItemRunning && !it.LeaseUntil.Add(skew).After(now)
}

func readLease(ctx context.Context, b backend.Backend, jobName string, skew time.Duration, now time.Time) (*leaseStatus, error) {
	l, err := b.Leases.Inspect(ctx, jobName)
	if errors.Is(err, lease.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("inspect lease of %s: %w", jobName, err)
	}
	s := &leaseStatus{Owner: l.Owner, Fence: l.Fence, State: leaseState(l, skew, now), ExpiresAt: opt(l.ExpiresAt), AcquiredAt: opt(l.AcquiredAt)}
	if counter, ok := b.Leases.(lease.ContentionCounter); ok {
		c, err := counter.Contention(ctx, jobName)
		if err != nil {
			return nil, fmt.Errorf("contention of %s: %w", jobName, err)
		}
		s.Contention = &contentionStatus{Count: c.Count, Last: opt(c.Last), LastHolder: c.Holder.Owner, LastFence: c.Holder.Fence, LastExpires: opt(c.Holder.ExpiresAt)}
	}
	return s, nil
}

// leaseState is held, expired (a holder whose lease ended, skew
// included: the next acquisition takes it over) or free.
func leaseState(l lease.Lease, skew time.Duration, now time.Time) string {
	switch {
	case l.Owner == "":
		return "free"
	case l.Held(now, skew):
		return "held"
	default:
		return "expired"
	}
}

func readQueues(ctx context.Context, b backend.Backend, j baton.Job) []queueStatus {
	out := []queueStatus{depthOf(ctx, "work", b.Work)}
	if name := j.Queue.Name; name != "" && b.JobQueueFunc != nil {
		// The job's own queue (baton.Job.Queue), where its items wait.
		if q, err := b.JobQueueFunc(ctx, name); err != nil {
			out = append(out, queueStatus{Role: "job:" + name, Error: err.Error()})
		} else {
			out = append(out, depthOf(ctx, "job:"+name, q))
		}
	}
	if b.DeadLetter != nil {
		out = append(out, depthOf(ctx, "dead_letter", b.DeadLetter))
	}
	return out
}

func depthOf(ctx context.Context, role string, q backend.Queue) queueStatus {
	s := queueStatus{Role: role}
	if q == nil {
		s.Error = "not configured"
		return s
	}
	d, err := queue.OpsOf(q).Depth(ctx)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	s.Visible, s.InFlight, s.Delayed, s.Approximate = d.Visible, d.InFlight, d.Delayed, d.Approximate
	return s
}

func readRun(ctx context.Context, l ledger.Store, j baton.Job, id ledger.RunID, now time.Time) (*runDetail, error) {
	run, err := currentRun(ctx, l, id)
	superseded := ""
	if errors.Is(err, errSuperseded) {
		superseded = run.ID.String()
	} else if err != nil {
		return nil, err
	}
	items, err := l.ListItems(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("list items of %s: %w", id, err)
	}
	expected := exec.SortedItemNames(j)
	if id.Submitted() || jobspec.RunTime(j) {
		if expected, err = ops.StoredNames(ctx, l, id); err != nil {
			return nil, err
		}
	}
	d := &runDetail{Current: superseded == "", SupersededBy: superseded}
	if d.Current {
		d.runStatus = newRunStatus(run, items, expected)
		if d.runStatus.Superseded, err = countSuperseded(ctx, l, run.ID); err != nil {
			return nil, err
		}
	} else {
		// Only the current generation has a run record; an older one is
		// described by its items.
		d.runStatus = runStatus{ID: id.String(), Nominal: id.Nominal.UTC(), Generation: id.Generation, State: "superseded", Items: countItems(items, expected)}
	}
	byAsset := map[string]ledger.Item{}
	for _, it := range items {
		byAsset[it.Key.Asset] = it
	}
	for _, name := range expected {
		it, ok := byAsset[name]
		if !ok {
			d.ItemList = append(d.ItemList, itemStatus{Key: ledger.ItemKey{Run: id, Asset: name}.String(), Asset: name, State: pending})
			continue
		}
		s := newItemStatus(it)
		if stuck(it, j.Limits.ClockSkew, now) {
			s.OverdueSeconds = now.Sub(it.LeaseUntil).Seconds()
		}
		d.ItemList = append(d.ItemList, s)
	}
	return d, nil
}

// countSuperseded counts the items of the generations before id's that
// were cancelled as superseded: one item listing per earlier generation,
// none for a generation-1 run.
func countSuperseded(ctx context.Context, l ledger.Store, id ledger.RunID) (int, error) {
	n := 0
	for g := 1; g < id.Generation; g++ {
		old := id
		old.Generation = g
		items, err := l.ListItems(ctx, old)
		if err != nil {
			return 0, fmt.Errorf("list items of %s: %w", old, err)
		}
		for _, it := range items {
			if it.State == ledger.ItemCancelled && strings.HasPrefix(it.Error, consumer.SupersededPrefix) {
				n++
			}
		}
	}
	return n, nil
}

func newRunStatus(run ledger.Run, items []ledger.Item, expected []string) runStatus {
	return runStatus{
		ID: run.ID.String(), Nominal: run.ID.Nominal.UTC(), Generation: run.ID.Generation, State: string(run.State),
		Cursor: run.Cursor, Total: run.Total, Fence: run.Fence, OpenedAt: run.OpenedAt.UTC(), UpdatedAt: run.UpdatedAt.UTC(),
		FinishedAt: opt(run.FinishedAt), Items: countItems(items, expected),
	}
}

// countItems counts items per state, and expected items without a record
// (or never attempted: ledger.Item.Unattempted) as PENDING. Every state appears, with 0 when no item is in it.
func countItems(items []ledger.Item, expected []string) map[string]int {
	counts := map[string]int{}
	for _, s := range itemStates {
		counts[s] = 0
	}
	have := map[string]bool{}
	for _, it := range items {
		if it.Unattempted() {
			counts[pending]++
		} else {
			counts[string(it.State)]++
		}
		have[it.Key.Asset] = true
	}
	for _, name := range expected {
		if !have[name] {
			counts[pending]++
		}
	}
	return counts
}

// itemStates are the columns of the runs table, in lifecycle order.
var itemStates = []string{pending, string(ledger.ItemRunning), string(ledger.ItemFailed),
	string(ledger.ItemSucceeded), string(ledger.ItemDead), string(ledger.ItemCancelled)}

func newItemStatus(it ledger.Item) itemStatus {
	s := itemStatus{Key: it.Key.String(), Asset: it.Key.Asset, State: string(it.State), Owner: it.Owner,
		Attempt: it.Attempt, Fence: it.Fence, StartedAt: opt(it.StartedAt), FinishedAt: opt(it.FinishedAt), Error: it.Error}
	if it.State == ledger.ItemRunning {
		s.LeaseUntil = opt(it.LeaseUntil)
	}
	if w, ok := it.NextAttempt(); ok {
		s.NextAttempt = opt(w.At)
		s.WaitingOn = &waitingOn{Kind: "retry_delay"}
		if w.Limit != "" {
			s.WaitingOn = &waitingOn{Kind: "limit", Limit: w.Limit, Key: w.Key}
		}
	}
	if it.State == ledger.ItemSucceeded {
		p := ledger.PreviewResult(it.Result)
		s.Result, s.ResultBytes, s.ResultTruncated, s.ResultBinary = p.Text, p.Bytes, p.Truncated, p.Binary
	}
	return s
}

// preview is s's result as ledger.PreviewResult made it.
func (s itemStatus) preview() ledger.ResultPreview {
	return ledger.ResultPreview{Text: s.Result, Bytes: s.ResultBytes, Truncated: s.ResultTruncated, Binary: s.ResultBinary}
}

// opt returns nil for the zero time, else t in UTC.
func opt(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func printPause(w io.Writer, p *pauseStatus) {
	if p == nil {
		return
	}
	skipped := fmt.Sprintf("%d tick(s) skipped", p.Skipped)
	if p.LastSkipped != nil {
		skipped += ", the latest " + rfc(*p.LastSkipped)
	}
	reason := ""
	if p.Reason != "" {
		reason = ": " + p.Reason
	}
	if p.Paused {
		fmt.Fprintf(w, "PAUSED since %s by %s%s; %s ('baton resume' runs the next tick)\n", rfc(p.Since), p.By, reason, skipped)
		return
	}
	fmt.Fprintf(w, "running; last paused %s to %s (resumed by %s%s); %s, not caught up\n", rfc(p.Since), rfcPtr(p.Until), p.By, reason, skipped)
}

func printStatus(w io.Writer, r statusReport) {
	sched := "schedule " + r.Schedule
	if r.Schedule == "" {
		sched = "no schedule (on demand or by a chain)"
	}
	fmt.Fprintf(w, "job %s, %s, %s store %s, at %s\n\n", r.Job, sched, r.Backend, r.Store, rfc(r.Now))
	printLease(w, r.Lease, r.Now)
	printPause(w, r.Pause)
	fmt.Fprintln(w)
	if r.Run != nil {
		printRunDetail(w, r.Run)
	} else {
		printRuns(w, r.Runs)
		printGaps(w, r.Gaps)
		printSubmissions(w, r.Submissions)
		fmt.Fprintln(w)
		printAssets(w, r.Assets, r.Now)
		fmt.Fprintln(w)
		printStuck(w, r.Stuck)
		printWaiting(w, r.Waiting, r.WaitingMore, r.Now)
		printLimits(w, r.Limits, r.Now)
	}
	fmt.Fprintln(w)
	printQueues(w, r.Queues)
	fmt.Fprintf(w, "\nretention: finished runs kept %s after they finish; %s\n", time.Duration(r.Retention.Seconds*float64(time.Second)), r.Retention.How)
}

func printLease(w io.Writer, l *leaseStatus, now time.Time) {
	if l == nil {
		fmt.Fprintln(w, "lease: never taken")
		return
	}
	switch l.State {
	case "held":
		fmt.Fprintf(w, "lease: held by %s, fence %d, expires %s (in %s)\n", l.Owner, l.Fence, rfc(*l.ExpiresAt), ago(l.ExpiresAt.Sub(now)))
	case "expired":
		fmt.Fprintf(w, "lease: expired — %s, fence %d, expired %s (%s ago); the next acquisition takes it over\n",
			l.Owner, l.Fence, rfc(*l.ExpiresAt), ago(now.Sub(*l.ExpiresAt)))
	default:
		fmt.Fprintf(w, "lease: free, fence %d (latest acquisition %s)\n", l.Fence, rfcPtr(l.AcquiredAt))
	}
	switch c := l.Contention; {
	case c == nil:
		fmt.Fprintln(w, "contention: not counted by this backend")
	case c.Count == 0:
		fmt.Fprintln(w, "contention: no acquisition refused")
	default:
		fmt.Fprintf(w, "contention: %d acquisitions refused; latest %s (%s ago) by holder %s, fence %d\n",
			c.Count, rfcPtr(c.Last), ago(now.Sub(*c.Last)), c.LastHolder, c.LastFence)
	}
}

func rfcPtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return rfc(*t)
}

func printRuns(w io.Writer, runs []runStatus) {
	if len(runs) == 0 {
		fmt.Fprintln(w, "runs: none yet")
		return
	}
	fmt.Fprintf(w, "recent runs (newest first):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "RUN\tSTATE\t%s\tSUPERSEDED\tSETTLED AFTER\n", strings.Join(itemStates, "\t"))
	for _, r := range runs {
		settled := "-"
		if r.FinishedAt != nil {
			settled = ago(r.FinishedAt.Sub(r.Nominal))
		}
		cols := make([]string, len(itemStates))
		for i, s := range itemStates {
			cols[i] = fmt.Sprint(r.Items[s])
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", r.ID, r.State, strings.Join(cols, "\t"), r.Superseded, settled)
	}
	tw.Flush()
}

func printSubmissions(w io.Writer, subs []submissionStatus) {
	if len(subs) == 0 {
		return
	}
	fmt.Fprintf(w, "\nrecent submissions (newest opened first; 'baton replay submission --key K' runs one again):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATE\tITEMS\tSUCCEEDED\tDEAD\tCANCELLED\tOPENED\tSETTLED AFTER")
	for _, r := range subs {
		settled := "-"
		if r.FinishedAt != nil {
			settled = ago(r.FinishedAt.Sub(r.OpenedAt))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", r.ID, r.State, r.Total, r.Succeeded, r.Dead, r.Cancelled, rfc(r.OpenedAt), settled)
	}
	tw.Flush()
}

func printAssets(w io.Writer, assets []assetStatus, now time.Time) {
	fmt.Fprintln(w, "assets:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ASSET\tLAST SUCCESS (TICK)\tSTALENESS\tRUN")
	for _, a := range assets {
		if a.LastSuccess == nil {
			fmt.Fprintf(tw, "%s\tnone in the scanned runs\t-\t-\n", a.Asset)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Asset, rfc(*a.LastSuccess), ago(now.Sub(*a.LastSuccess)), a.Run)
	}
	tw.Flush()
}

func printStuck(w io.Writer, items []itemStatus) {
	if len(items) == 0 {
		fmt.Fprintln(w, "stuck items: none")
		return
	}
	fmt.Fprintf(w, "stuck items (RUNNING past their lease; 'baton replay item' or redelivery takes them over):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ITEM\tOWNER\tATTEMPT\tLEASE ENDED")
	for _, s := range items {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s ago\n", s.Key, s.Owner, s.Attempt, ago(time.Duration(s.OverdueSeconds*float64(time.Second))))
	}
	tw.Flush()
}

func printRunDetail(w io.Writer, d *runDetail) {
	if d.Current {
		fmt.Fprintf(w, "run %s: %s, fan-out %d/%d, fence %d, opened %s\n", d.ID, d.State, d.Cursor, d.Total, d.Fence, rfc(d.OpenedAt))
	} else {
		fmt.Fprintf(w, "run %s: superseded by %s\n", d.ID, d.SupersededBy)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ITEM\tSTATE\tATTEMPT\tOWNER\tLEASE UNTIL\tFINISHED\tRESULT\tERROR")
	for _, s := range d.ItemList {
		state := s.State
		if s.OverdueSeconds > 0 {
			state += " (stuck)"
		}
		owner, until, finished := s.Owner, rfcPtr(s.LeaseUntil), rfcPtr(s.FinishedAt)
		if owner == "" {
			owner = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", s.Asset, state, s.Attempt, owner, until, finished, s.preview().Line(resultWidth), s.Error)
	}
	tw.Flush()
	counts := make([]string, 0, len(itemStates))
	for _, s := range itemStates {
		if n := d.Items[s]; n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, s))
		}
	}
	fmt.Fprintf(w, "items: %s\n", strings.Join(counts, ", "))
	for _, s := range d.ItemList {
		if s.NextAttempt != nil {
			fmt.Fprintf(w, "waiting: %s, next attempt %s, on %s\n", s.Asset, rfc(*s.NextAttempt), s.WaitingOn.text())
		}
	}
	if d.runStatus.Superseded > 0 {
		fmt.Fprintf(w, "superseded: %d items of earlier generations acknowledged as superseded\n", d.runStatus.Superseded)
	}
}

func printQueues(w io.Writer, qs []queueStatus) {
	for _, q := range qs {
		name := "work queue"
		if q.Role == "dead_letter" {
			name = "dead-letter queue"
		}
		if q.Error != "" {
			fmt.Fprintf(w, "%s: depth unknown (%s)\n", name, q.Error)
			continue
		}
		approx := ""
		if q.Approximate {
			approx = " (approximate)"
		}
		fmt.Fprintf(w, "%s: %d visible, %d in flight, %d delayed%s\n", name, q.Visible, q.InFlight, q.Delayed, approx)
	}
	if len(qs) == 1 {
		fmt.Fprintln(w, "dead-letter queue: none configured")
	}
}

func printGaps(w io.Writer, gaps []tickGap) {
	if len(gaps) == 0 {
		return
	}
	byReason := map[string][]string{}
	var reasons []string
	for _, g := range gaps {
		if byReason[g.Reason] == nil {
			reasons = append(reasons, g.Reason)
		}
		byReason[g.Reason] = append(byReason[g.Reason], g.Tick.UTC().Format(time.RFC3339))
	}
	fmt.Fprintln(w, "ticks without a run:")
	for _, r := range reasons {
		ticks := byReason[r]
		shown := ticks[:min(len(ticks), 5)]
		more := ""
		if len(ticks) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(ticks)-len(shown))
		}
		fmt.Fprintf(w, "  %s: %d (%s%s)\n", r, len(ticks), strings.Join(shown, ", "), more)
	}
}

func printWaiting(w io.Writer, items []itemStatus, more int, now time.Time) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(w, "\nwaiting items (their next attempt; soonest first):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ITEM\tATTEMPT\tNEXT ATTEMPT\tWAITING ON\tLAST ERROR")
	for _, s := range items {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", s.Key, s.Attempt, nextAttempt(s.NextAttempt, now), s.WaitingOn.text(), orDash(s.Error))
	}
	tw.Flush()
	if more > 0 {
		fmt.Fprintf(w, "and %d more waiting\n", more)
	}
}

// nextAttempt is a next attempt's time, with how far off it is.
func nextAttempt(t *time.Time, now time.Time) string {
	switch {
	case t == nil:
		return "-"
	case t.After(now):
		return fmt.Sprintf("%s (in %s)", rfc(*t), ago(t.Sub(now)))
	}
	return fmt.Sprintf("%s (due)", rfc(*t))
}

func (o *waitingOn) text() string {
	switch {
	case o == nil:
		return "-"
	case o.Kind == "limit" && o.Key != "":
		return fmt.Sprintf("limit %s key %s", o.Limit, limitstatus.Cut(o.Key))
	case o.Kind == "limit":
		return "limit " + o.Limit
	}
	return "retry delay"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printLimits(w io.Writer, limits []limitstatus.Limit, now time.Time) {
	if len(limits) == 0 {
		return
	}
	fmt.Fprintf(w, "\nrate limits now (hottest keys first, at most %d each):\n", limitstatus.Top)
	for _, l := range limits {
		what := fmt.Sprintf("%d in flight", l.InFlight)
		if l.InFlight == 0 {
			what = fmt.Sprintf("%d starts per %s, window from %s", l.Starts, l.Per, rfcPtr(l.Window))
		}
		keyed := ""
		if l.Keyed {
			keyed = " per key"
		}
		fmt.Fprintf(w, "  %s: %s%s; %d item(s) waiting\n", l.Name, what, keyed, l.Waiting)
		if l.Error != "" {
			fmt.Fprintf(w, "    usage unknown: %s\n", l.Error)
		}
		if len(l.Keys) == 0 && l.Error == "" {
			fmt.Fprintln(w, "    idle")
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, k := range l.Keys {
			name := "(the limit)"
			if l.Keyed {
				name = limitstatus.Cut(k.Key)
			}
			use := fmt.Sprintf("%d/%d held", len(k.Holders), l.InFlight)
			if l.InFlight == 0 {
				use = fmt.Sprintf("%d/%d starts", k.Starts, l.Starts)
			}
			fmt.Fprintf(tw, "    %s\t%s\t%d waiting\n", name, use, len(k.Waiters))
			for _, h := range k.Holders {
				by := h.Item
				if by == "" {
					by = h.Holder
				}
				fmt.Fprintf(tw, "      slot %d\theld by %s\tuntil %s\n", h.Slot, by, rfc(h.Until))
			}
			for _, wt := range k.Waiters {
				fmt.Fprintf(tw, "      waiter\t%s\tnext attempt %s\n", wt.Item, nextAttempt(&wt.NextAttempt, now))
			}
		}
		tw.Flush()
		if l.OtherKeys > 0 {
			fmt.Fprintf(w, "    and %d other key(s)\n", l.OtherKeys)
		}
	}
}
