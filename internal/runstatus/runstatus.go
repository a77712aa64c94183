// Package runstatus computes what an operator is shown of a job and its
// runs, once, for every view: 'baton status' (text and --json), the
// dashboard and batonclient's Status and Wait render its data and decide
// nothing of their own. It reads a backend (the lease, pause, ledger,
// queue and rate-limit stores) at a time the caller gives (Now: leases,
// stuck items and staleness are judged at it) and writes nothing.
//
// # Decisions
//
//   - Counts: an item is counted in its record's state, except an item
//     never attempted (ledger.Item.Unattempted: FAILED at attempt 0, a
//     record NoteWait made while it waits on a limit), which is PENDING,
//     as is an expected item without a record (CountItems).
//   - Stuck: RUNNING with a lease that ended more than the job's
//     clock-skew allowance ago (Stuck).
//   - Lease: held while its holder's lease, skew included, has not ended;
//     expired once it has; free when nobody holds it (LeaseState).
//   - Ticks without a run: the schedule's ticks among the listed runs'
//     span that have no run, skipped while paused or by the catch-up
//     policy, pending catch-up, or missed (TickGaps).
//
// The types are the JSON form of 'baton status --json', a public format:
// their field names and shapes change only with a version.
package runstatus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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

// Catalog is status's --json report without --job (or --run) for a
// catalog of several jobs: each job's report, in name order.
type Catalog struct {
	Backend string    `json:"backend"`
	Store   string    `json:"store"`
	Now     time.Time `json:"now"`
	Jobs    []Report  `json:"jobs"`
}

// Report is a job's status: what 'baton status' prints, its JSON form
// the --json output, and what the dashboard's job page shows.
type Report struct {
	Job      string    `json:"job"`
	Schedule string    `json:"schedule"` // "": none (on demand, or by a chain)
	Backend  string    `json:"backend"`
	Store    string    `json:"store"`
	Now      time.Time `json:"now"`
	Lease    *Lease    `json:"lease"` // null: the job never took its lease
	// Pause is the job's pause record; null when the job was never paused
	// or the backend cannot pause jobs.
	Pause *Pause `json:"pause,omitempty"`
	Runs  []Run  `json:"runs,omitempty"`
	// Submissions are the job's submitted runs (the current generation
	// of each dedupe key), newest opened first, at most --runs: read
	// from their run records only (counts once finished). Null when the
	// backend cannot list them.
	Submissions []Submission `json:"submissions,omitempty"`
	// Gaps are the schedule's ticks, among the listed runs' span, that have
	// no run: skipped by the job's catch-up policy, waiting to be caught
	// up, or missed.
	Gaps   []TickGap `json:"ticks_without_run,omitempty"`
	Assets []Asset   `json:"assets,omitempty"`
	Stuck  []Item    `json:"stuck,omitempty"`
	// Waiting are the items waiting for their next attempt (a retry
	// delay, or given back by a busy limit key), soonest first, at most
	// MaxWaiting; WaitingMore counts the others. Among the runs read.
	Waiting     []Item `json:"waiting,omitempty"`
	WaitingMore int    `json:"waiting_more,omitempty"`
	// Limits are the job's rate limits now: each one's hottest keys
	// (starts in the current window, slots held and by which items,
	// waiters); see package limitstatus.
	Limits []limitstatus.Limit `json:"limits,omitempty"`
	Run    *RunDetail          `json:"run,omitempty"` // with --run
	Queues []Queue             `json:"queues"`
	// Retention says what is kept of the job's finished runs and for how
	// long.
	Retention Retention `json:"retention"`
}

// Retention is what a report says of retention.
type Retention struct {
	// Seconds is the job's Retention: finished runs are kept at least
	// this long after they finish, and a submission's dedupe key holds
	// for as long.
	Seconds float64 `json:"seconds"`
	// How says how the backend removes them after it.
	How string `json:"how"`
}

// Pause is a job's pause record (lease.Pauser).
type Pause struct {
	Paused      bool       `json:"paused"`
	Since       time.Time  `json:"since"`
	Until       *time.Time `json:"until,omitempty"` // null while paused
	By          string     `json:"by"`
	Reason      string     `json:"reason,omitempty"`
	Skipped     int64      `json:"skipped_ticks"`
	LastSkipped *time.Time `json:"last_skipped,omitempty"`
}

// NewPause is p, nil when the job was never paused.
func NewPause(p lease.Pause) *Pause {
	if p.Since.IsZero() {
		return nil
	}
	return &Pause{Paused: p.Paused, Since: p.Since.UTC(), Until: opt(p.Until), By: p.By, Reason: p.Reason,
		Skipped: p.Skipped, LastSkipped: opt(p.LastSkipped)}
}

// ReadPause returns the job's pause record, nil when the backend has no
// pause ability or the job was never paused.
func ReadPause(ctx context.Context, b backend.Backend, job string) (*Pause, error) {
	pauser, ok := lease.PauserOf(b.Leases)
	if !ok {
		return nil, nil
	}
	p, err := pauser.PauseOf(ctx, job)
	if err != nil {
		return nil, fmt.Errorf("pause of %s: %w", job, err)
	}
	return NewPause(p), nil
}

// TickGap is a tick of the schedule without a run, and why.
type TickGap struct {
	Tick   time.Time `json:"tick"`
	Reason string    `json:"reason"` // skipped, catch-up pending or missed
}

// MaxGaps bounds the ticks without a run a report lists.
const MaxGaps = 100

// TickGaps returns the schedule's ticks from the oldest run listed to the
// latest tick at or before now that have no run, newest first, with why.
func TickGaps(j baton.Job, runs []ledger.Run, pause *Pause, now time.Time) []TickGap {
	sched, err := schedule.ParseIn(j.Schedule, j.TimeZone)
	if err != nil || len(runs) == 0 {
		return nil
	}
	has := make(map[int64]bool, len(runs))
	for _, r := range runs {
		has[r.ID.Nominal.Unix()] = true
	}
	oldest, latest := runs[len(runs)-1].ID.Nominal, sched.Prev(now)
	var gaps []TickGap
	for at := latest; !at.IsZero() && at.After(oldest) && len(gaps) < MaxGaps; at = sched.Prev(at.Add(-time.Nanosecond)) {
		if has[at.Unix()] {
			continue
		}
		reason := "missed"
		if pause != nil && !at.Before(sched.Prev(pause.Since)) && (pause.Until == nil || !at.After(*pause.Until)) {
			gaps = append(gaps, TickGap{Tick: at, Reason: "skipped (paused)"})
			continue
		}
		if cu := j.CatchUp; cu.Window > 0 && !at.Before(latest.Add(-cu.Window)) {
			reason = "catch-up pending"
			if cu.Skip {
				reason = "skipped (catch-up policy)"
			}
		}
		gaps = append(gaps, TickGap{Tick: at, Reason: reason})
	}
	return gaps
}

// Lease is a job's lease, judged at the report's time.
type Lease struct {
	Owner      string     `json:"owner"` // "" when free
	Fence      int64      `json:"fence"`
	State      string     `json:"state"` // held, expired or free
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
	AcquiredAt *time.Time `json:"acquired_at,omitempty"`
	// Contention is null when the backend does not count refusals.
	Contention *Contention `json:"contention"`
}

// Contention counts the acquisitions of the lease that were refused.
type Contention struct {
	Count       int64      `json:"count"`
	Last        *time.Time `json:"last,omitempty"`
	LastHolder  string     `json:"last_holder,omitempty"`
	LastFence   int64      `json:"last_fence,omitempty"`
	LastExpires *time.Time `json:"last_holder_expires_at,omitempty"`
}

// Run is a run in the overview, and the head of a run's detail.
type Run struct {
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

// Submission is one submitted run in the overview.
type Submission struct {
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

// Asset is an asset's latest success among the scanned runs.
type Asset struct {
	Asset string `json:"asset"`
	// LastSuccess is the nominal time of the latest scanned tick whose item
	// SUCCEEDED; null when none of the scanned runs has one.
	LastSuccess      *time.Time `json:"last_success"`
	Run              string     `json:"run,omitempty"`
	FinishedAt       *time.Time `json:"finished_at,omitempty"`
	StalenessSeconds *float64   `json:"staleness_seconds"`
}

// Item is an item of a run: its record, or PENDING without one.
type Item struct {
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
	WaitingOn   *WaitingOn `json:"waiting_on,omitempty"`
}

// WaitingOn is what a waiting item waits for: a retry delay after a
// failed attempt (its error is the item's), or a busy key of a limit.
type WaitingOn struct {
	Kind  string `json:"kind"`            // retry_delay or limit
	Limit string `json:"limit,omitempty"` // the limit's name (kind limit)
	Key   string `json:"key,omitempty"`   // its key, for a keyed limit
}

// MaxWaiting bounds the waiting items a report lists.
const MaxWaiting = 20

// RunDetail is a run and its items (status --run).
type RunDetail struct {
	Run
	Current      bool   `json:"current"` // false: an older generation of the tick
	ItemList     []Item `json:"item_list"`
	SupersededBy string `json:"superseded_by,omitempty"`
}

// Queue is the depth of a queue the job uses.
type Queue struct {
	Role        string `json:"role"` // work, job:<queue name> or dead_letter
	Visible     int    `json:"visible"`
	InFlight    int    `json:"in_flight"`
	Delayed     int    `json:"delayed"`
	Approximate bool   `json:"approximate"`
	Error       string `json:"error,omitempty"` // why the depth is unknown
}

// pending is the state status reports for an expected item without a record.
const Pending = "PENDING"

// Params say what Read reads.
type Params struct {
	Run  ledger.RunID // zero: the overview
	Runs int          // recent runs listed
	// History bounds the runs scanned for last successes and stuck items;
	// past Runs, only unfinished runs are read once every asset has its
	// latest success.
	History int
	Now     time.Time
	// Records: the listed runs are described by their records alone, their
	// items not read (a run-time list may be a million items): Run.Items
	// is nil, and no stuck, waiting or asset is found.
	Records bool
	// RunFunc, optional, is called with each listed run, newest first: its
	// record, its items (nil with Records) and what Read made of it; the
	// dashboard draws its charts from them.
	RunFunc func(rec ledger.Run, items []ledger.Item, st Run)
}

// Read reads a job's report: with p.Run its run's detail, else the
// overview. It writes nothing.
func Read(ctx context.Context, b backend.Backend, j baton.Job, p Params) (Report, error) {
	rep := Report{Job: j.Name, Schedule: j.Schedule, Backend: b.Name, Now: p.Now,
		Retention: Retention{Seconds: jobspec.Retention(j).Seconds(), How: b.Retention}}
	var err error
	if rep.Lease, err = ReadLease(ctx, b, j.Name, j.Limits.ClockSkew, p.Now); err != nil {
		return rep, err
	}
	if rep.Pause, err = ReadPause(ctx, b, j.Name); err != nil {
		return rep, err
	}
	rep.Queues = Queues(ctx, b, j)
	if !p.Run.Nominal.IsZero() || p.Run.Submitted() {
		rep.Run, err = ReadRun(ctx, b.Ledger, j, p.Run, p.Now)
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
		rep.Submissions = []Submission{}
		for _, r := range subs {
			rep.Submissions = append(rep.Submissions, Submission{ID: r.ID.String(), Key: r.ID.Submission, Generation: r.ID.Generation,
				State: string(r.State), Total: r.Total, OpenedAt: r.OpenedAt.UTC(), FinishedAt: opt(r.FinishedAt),
				Succeeded: r.Succeeded, Dead: r.Dead, Cancelled: r.Cancelled})
		}
	}
	rep.Gaps = TickGaps(j, listed, rep.Pause, p.Now)
	expected := exec.SortedItemNames(j)
	last := map[string]ledger.Item{}
	var waiting []ledger.Item
	rep.Runs, rep.Stuck = []Run{}, []Item{}
	for i, run := range runs {
		if p.Records {
			if i < p.Runs {
				rs := NewRun(run, nil, nil)
				rs.Items = nil
				rep.Runs = append(rep.Runs, rs)
				if p.RunFunc != nil {
					p.RunFunc(run, nil, rs)
				}
			}
			continue
		}
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
			rs := NewRun(run, items, expected)
			if rs.Superseded, err = CountSuperseded(ctx, b.Ledger, run.ID); err != nil {
				return rep, err
			}
			rep.Runs = append(rep.Runs, rs)
			if p.RunFunc != nil {
				p.RunFunc(run, items, rs)
			}
		}
		for _, it := range items {
			if _, seen := last[it.Key.Asset]; !seen && it.State == ledger.ItemSucceeded {
				last[it.Key.Asset] = it
			}
			if Stuck(it, j.Limits.ClockSkew, p.Now) {
				s := NewItem(it)
				s.OverdueSeconds = p.Now.Sub(it.LeaseUntil).Seconds()
				rep.Stuck = append(rep.Stuck, s)
			}
			if _, ok := it.NextAttempt(); ok {
				waiting = append(waiting, it)
			}
		}
	}
	rep.Waiting, rep.WaitingMore = Waiting(waiting)
	if len(j.RateLimits) > 0 {
		rep.Limits = limitstatus.Read(ctx, limitstatus.Params{Job: j, Store: b.RateLimits, Items: waiting, Now: p.Now})
	}
	for _, name := range expected {
		if p.Records {
			break
		}
		a := Asset{Asset: name}
		if it, ok := last[name]; ok {
			nominal, finished := it.Key.Run.Nominal.UTC(), it.FinishedAt.UTC()
			stale := p.Now.Sub(nominal).Seconds()
			a.LastSuccess, a.Run, a.FinishedAt, a.StalenessSeconds = &nominal, it.Key.Run.String(), &finished, &stale
		}
		rep.Assets = append(rep.Assets, a)
	}
	return rep, nil
}

// Waiting returns the items of items, which wait for their next
// attempt, soonest first, at most MaxWaiting, and how many are left out.
func Waiting(items []ledger.Item) ([]Item, int) {
	sorted := slices.Clone(items)
	slices.SortFunc(sorted, func(a, b ledger.Item) int {
		if c := a.Wait.At.Compare(b.Wait.At); c != 0 {
			return c
		}
		return strings.Compare(a.Key.String(), b.Key.String())
	})
	more := max(0, len(sorted)-MaxWaiting)
	sorted = sorted[:len(sorted)-more]
	out := make([]Item, 0, len(sorted))
	for _, it := range sorted {
		out = append(out, NewItem(it))
	}
	return out, more
}

// stuck reports whether it is RUNNING with a lease that ended more than
// skew ago (a claim by anyone else would succeed).
func Stuck(it ledger.Item, skew time.Duration, now time.Time) bool {
	return it.State == ledger.ItemRunning && !it.LeaseUntil.Add(skew).After(now)
}

// ReadLease reads job jobName's lease and judges it at now
// (LeaseState); nil when it was never taken.
func ReadLease(ctx context.Context, b backend.Backend, jobName string, skew time.Duration, now time.Time) (*Lease, error) {
	l, err := b.Leases.Inspect(ctx, jobName)
	if errors.Is(err, lease.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("inspect lease of %s: %w", jobName, err)
	}
	s := &Lease{Owner: l.Owner, Fence: l.Fence, State: LeaseState(l, skew, now), ExpiresAt: opt(l.ExpiresAt), AcquiredAt: opt(l.AcquiredAt)}
	if counter, ok := b.Leases.(lease.ContentionCounter); ok {
		c, err := counter.Contention(ctx, jobName)
		if err != nil {
			return nil, fmt.Errorf("contention of %s: %w", jobName, err)
		}
		s.Contention = &Contention{Count: c.Count, Last: opt(c.Last), LastHolder: c.Holder.Owner, LastFence: c.Holder.Fence, LastExpires: opt(c.Holder.ExpiresAt)}
	}
	return s, nil
}

// LeaseState is held, expired (a holder whose lease ended, skew
// included: the next acquisition takes it over) or free.
func LeaseState(l lease.Lease, skew time.Duration, now time.Time) string {
	switch {
	case l.Owner == "":
		return "free"
	case l.Held(now, skew):
		return "held"
	default:
		return "expired"
	}
}

// Queues are the depths of the work queue, the job's own queue (if it
// has one) and the dead-letter queue; a depth unknown says why.
func Queues(ctx context.Context, b backend.Backend, j baton.Job) []Queue {
	out := []Queue{depthOf(ctx, "work", b.Work)}
	if name := j.Queue.Name; name != "" && b.JobQueueFunc != nil {
		// The job's own queue (baton.Job.Queue), where its items wait.
		if q, err := b.JobQueueFunc(ctx, name); err != nil {
			out = append(out, Queue{Role: "job:" + name, Error: err.Error()})
		} else {
			out = append(out, depthOf(ctx, "job:"+name, q))
		}
	}
	if b.DeadLetter != nil {
		out = append(out, depthOf(ctx, "dead_letter", b.DeadLetter))
	}
	return out
}

func depthOf(ctx context.Context, role string, q backend.Queue) Queue {
	s := Queue{Role: role}
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

// ErrNoRun matches ReadRun's error for an id that names no run: its tick
// or submission has none (or it was removed after its retention), or its
// generation is past the latest.
var ErrNoRun = errors.New("no such run")

// ReadRun reads run id of job j: its counts by state (Unattempted items
// as PENDING), the superseded items of its earlier generations, and its
// items, every expected one (the job's items, or a stored list's), those
// without a record PENDING and stuck ones with how long ago their lease
// ended. An older generation of a tick is described by its items, with
// Current false and SupersededBy the current one.
func ReadRun(ctx context.Context, l ledger.Store, j baton.Job, id ledger.RunID, now time.Time) (*RunDetail, error) {
	run, err := ledger.GetRunOf(ctx, l, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil, fmt.Errorf("run %s: %w", id, ErrNoRun)
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	if id.Generation > run.ID.Generation {
		return nil, fmt.Errorf("run %s: %w (its latest generation is %s)", id, ErrNoRun, run.ID)
	}
	superseded := ""
	if id.Generation < run.ID.Generation {
		superseded = run.ID.String()
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
	d := &RunDetail{Current: superseded == "", SupersededBy: superseded}
	if d.Current {
		d.Run = NewRun(run, items, expected)
		if d.Run.Superseded, err = CountSuperseded(ctx, l, run.ID); err != nil {
			return nil, err
		}
	} else {
		// Only the current generation has a run record; an older one is
		// described by its items.
		d.Run = Run{ID: id.String(), Nominal: id.Nominal.UTC(), Generation: id.Generation, State: "superseded", Items: CountItems(items, expected)}
	}
	byAsset := map[string]ledger.Item{}
	for _, it := range items {
		byAsset[it.Key.Asset] = it
	}
	for _, name := range expected {
		it, ok := byAsset[name]
		if !ok {
			d.ItemList = append(d.ItemList, Item{Key: ledger.ItemKey{Run: id, Asset: name}.String(), Asset: name, State: Pending})
			continue
		}
		s := NewItem(it)
		if Stuck(it, j.Limits.ClockSkew, now) {
			s.OverdueSeconds = now.Sub(it.LeaseUntil).Seconds()
		}
		d.ItemList = append(d.ItemList, s)
	}
	return d, nil
}

// CountSuperseded counts the items of the generations before id's that
// were cancelled as superseded: one item listing per earlier generation,
// none for a generation-1 run.
func CountSuperseded(ctx context.Context, l ledger.Store, id ledger.RunID) (int, error) {
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

// NewRun is run with its items counted (CountItems over expected).
func NewRun(run ledger.Run, items []ledger.Item, expected []string) Run {
	return Run{
		ID: run.ID.String(), Nominal: run.ID.Nominal.UTC(), Generation: run.ID.Generation, State: string(run.State),
		Cursor: run.Cursor, Total: run.Total, Fence: run.Fence, OpenedAt: run.OpenedAt.UTC(), UpdatedAt: run.UpdatedAt.UTC(),
		FinishedAt: opt(run.FinishedAt), Items: CountItems(items, expected),
	}
}

// CountItems counts items per state, and expected items without a record
// (or never attempted: ledger.Item.Unattempted) as PENDING. Every state appears, with 0 when no item is in it.
func CountItems(items []ledger.Item, expected []string) map[string]int {
	counts := map[string]int{}
	for _, s := range States {
		counts[s] = 0
	}
	have := map[string]bool{}
	for _, it := range items {
		if it.Unattempted() {
			counts[Pending]++
		} else {
			counts[string(it.State)]++
		}
		have[it.Key.Asset] = true
	}
	for _, name := range expected {
		if !have[name] {
			counts[Pending]++
		}
	}
	return counts
}

// States are the states items are counted in, in lifecycle order: the
// columns of the runs tables.
var States = []string{Pending, string(ledger.ItemRunning), string(ledger.ItemFailed),
	string(ledger.ItemSucceeded), string(ledger.ItemDead), string(ledger.ItemCancelled)}

// NewItem is it as a report shows it: with a SUCCEEDED item's result
// previewed (ledger.PreviewResult), and a waiting item's next attempt.
func NewItem(it ledger.Item) Item {
	s := Item{Key: it.Key.String(), Asset: it.Key.Asset, State: string(it.State), Owner: it.Owner,
		Attempt: it.Attempt, Fence: it.Fence, StartedAt: opt(it.StartedAt), FinishedAt: opt(it.FinishedAt), Error: it.Error}
	if it.State == ledger.ItemRunning {
		s.LeaseUntil = opt(it.LeaseUntil)
	}
	if w, ok := it.NextAttempt(); ok {
		s.NextAttempt, s.WaitingOn = opt(w.At), NewWaitingOn(w)
	}
	if it.State == ledger.ItemSucceeded {
		p := ledger.PreviewResult(it.Result)
		s.Result, s.ResultBytes, s.ResultTruncated, s.ResultBinary = p.Text, p.Bytes, p.Truncated, p.Binary
	}
	return s
}

// opt returns nil for the zero time, else t in UTC.
func opt(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// NewWaitingOn is what a noted wait is for.
func NewWaitingOn(w ledger.ItemWait) *WaitingOn {
	if w.Limit != "" {
		return &WaitingOn{Kind: "limit", Limit: w.Limit, Key: w.Key}
	}
	return &WaitingOn{Kind: "retry_delay"}
}

// Text is o in words: "retry delay", "limit L" or "limit L key K" (the
// key cut by limitstatus.Cut); "-" for nil.
func (o *WaitingOn) Text() string {
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

// Window is a part of a run's stored item list (a submission's, a
// run-time list's): a few of its pages, read without the rest.
type Window struct {
	From, To   int      // the pages shown: From to To-1
	Names      []string // their items, in order
	First      int      // the position in the list of Names[0] (0-based)
	Final      bool     // the list ends on the pages shown
	Unwritten  bool     // page To is not stored yet (the run is fanning out)
	Prev, Next int      // the first page of the previous and the next window; -1: none
}

// ReadWindow reads pages from..from+pages-1 of run id's item list, page by
// page, and the item records of those pages only (one range read each: a
// page is a contiguous range of the run's records). Prev and Next step by
// pages.
func ReadWindow(ctx context.Context, l ledger.Store, id ledger.RunID, from, pages int) (*Window, []ledger.Item, error) {
	w := &Window{From: from, To: from, First: from * ledger.PageItems, Prev: -1, Next: -1}
	if from > 0 {
		w.Prev = max(0, from-pages)
	}
	var items []ledger.Item
	for i := from; i < from+pages; i++ {
		p, err := l.GetPage(ctx, id, i)
		if errors.Is(err, ledger.ErrNotFound) {
			w.Unwritten = true
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("page %d of %s: %w", i, id, err)
		}
		w.To = i + 1
		if len(p.Items) > 0 {
			got, err := l.ListItemRange(ctx, id, p.Items[0].Name, p.Items[len(p.Items)-1].Name)
			if err != nil {
				return nil, nil, fmt.Errorf("items of page %d of %s: %w", i, id, err)
			}
			items = append(items, got...)
		}
		w.Names = append(w.Names, p.Names()...)
		if p.Final {
			w.Final = true
			break
		}
	}
	if !w.Final && !w.Unwritten {
		w.Next = w.To
	}
	return w, items, nil
}
