package ui

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/limitstatus"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/runstatus"
	"github.com/batonhq/baton/internal/schedule"
	"github.com/batonhq/baton/internal/strictjson"
)

var funcs = template.FuncMap{
	"rfc": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	},
	"clock": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("15:04:05.000")
	},
	"dur":   short,
	"since": func(from, to time.Time) string { return short(to.Sub(from)) },
	"state": stateClass,
	// confirmURL is the confirmation page of a: its values are encoded by
	// url.Values, so the URL is safe as it is.
	"confirmURL": func(a Action) template.URL { return template.URL("/confirm?" + a.Values().Encode()) },
	"f1":         func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"add":        func(a, b float64) float64 { return a + b },
	"add1":       func(n int) int { return n + 1 },
	"plus":       func(a, b int) int { return a + b },
	"sub1":       func(n int) int { return n - 1 },
	"pagesShown": func() int { return pagesShown },
	"pageItems":  func() int { return ledger.PageItems },
	"dict": func(kv ...any) (map[string]any, error) {
		if len(kv)%2 != 0 {
			return nil, errors.New("dict: odd arguments")
		}
		m := make(map[string]any, len(kv)/2)
		for i := 0; i < len(kv); i += 2 {
			k, ok := kv[i].(string)
			if !ok {
				return nil, errors.New("dict: a key is not a string")
			}
			m[k] = kv[i+1]
		}
		return m, nil
	},
	"ternary": func(c bool, a, b string) string {
		if c {
			return a
		}
		return b
	},
	"runURL": func(id ledger.RunID) string {
		return "/run?" + url.Values{"id": {id.String()}}.Encode()
	},
	"windowURL": func(id ledger.RunID, from int) string {
		return "/run?" + url.Values{"id": {id.String()}, "from": {strconv.Itoa(from)}}.Encode()
	},
}

// jobRow is a job on the front page.
type jobRow struct {
	Name, Schedule string
	Next, Prev     time.Time
	Latest         *ledger.Run
	Lease          leaseView
	Items          int
	RunTime        bool // the items are computed when a run opens
	Pause          *runstatus.Pause
	Subs           submissions
}

// submissions are a job's recent submissions, when the ledger lists them.
type submissions struct {
	Listed bool // the ledger can list them (ledger.SubmissionLister)
	Runs   []runRow
}

// readPause is the job's pause record, nil when the job was never paused
// or the lease store cannot pause jobs (runstatus.ReadPause).
func (s *Server) readPause(r *http.Request, job string) (*runstatus.Pause, error) {
	return runstatus.ReadPause(r.Context(), s.o.Backend, job)
}

// readSubmissions lists up to limit of the job's submissions, newest
// first, with their counts from the run records (a submission's items
// are not read here: it may have a hundred thousand).
func (s *Server) readSubmissions(r *http.Request, job string, limit int) (submissions, error) {
	lister, ok := s.o.Backend.Ledger.(ledger.SubmissionLister)
	if !ok {
		return submissions{}, nil
	}
	runs, err := lister.ListSubmissions(r.Context(), ledger.ListSubmissionsParams{Job: job, Limit: limit})
	if err != nil {
		return submissions{}, fmt.Errorf("list submissions of %s: %w", job, err)
	}
	out := submissions{Listed: true}
	for _, run := range runs {
		out.Runs = append(out.Runs, recordRow(run))
	}
	return out, nil
}

// recordRow is a run's row from its record alone: its items (Total, once
// fanned out) and, once finished, its counts per end state; the states in
// between are not counted.
func recordRow(run ledger.Run) runRow {
	row := runRow{Run: run, Recorded: true, Items: max(run.Total, run.Cursor)}
	if run.State.Finished() {
		row.Counts = []stateCount{{string(ledger.ItemSucceeded), run.Succeeded}, {string(ledger.ItemDead), run.Dead}, {string(ledger.ItemCancelled), run.Cancelled}}
		if !run.FinishedAt.IsZero() && !run.OpenedAt.IsZero() {
			row.OpenToDone = run.FinishedAt.Sub(run.OpenedAt)
		}
	}
	return row
}

func (s *Server) jobsPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	now := s.o.NowFunc().UTC()
	var rows []jobRow
	live := false
	for _, j := range s.o.Catalog.Jobs() {
		row := jobRow{Name: j.Name, Schedule: j.Schedule, Items: len(j.Assets) + len(j.Derived), RunTime: jobspec.RunTime(j)}
		if sched, err := schedule.ParseIn(j.Schedule, j.TimeZone); err == nil {
			row.Next, row.Prev = sched.Next(now), sched.Prev(now)
		}
		var err error
		if row.Pause, err = s.readPause(r, j.Name); err != nil {
			s.fail(w, r, http.StatusInternalServerError, err)
			return
		}
		if row.Subs, err = s.readSubmissions(r, j.Name, 5); err != nil {
			s.fail(w, r, http.StatusInternalServerError, err)
			return
		}
		for _, sub := range row.Subs.Runs {
			live = live || !sub.Run.State.Finished()
		}
		runs, err := s.o.Backend.Ledger.ListRuns(ctx, ledger.ListRunsParams{Job: j.Name, Limit: 1})
		if err != nil {
			s.fail(w, r, http.StatusInternalServerError, fmt.Errorf("list runs of %s: %w", j.Name, err))
			return
		}
		if len(runs) > 0 {
			row.Latest = &runs[0]
			live = live || !runs[0].State.Finished()
		}
		if row.Lease, err = s.readLease(r, j, now); err != nil {
			s.fail(w, r, http.StatusInternalServerError, err)
			return
		}
		rows = append(rows, row)
	}
	s.render(w, r, http.StatusOK, "jobs", page{Title: "Jobs", Nav: "jobs", Live: live, Now: now, Body: rows})
}

// leaseView is a job's lease as the pages show it.
type leaseView struct {
	Job        string
	Exists     bool
	State      string // held, expired or free
	Owner      string
	Fence      int64
	ExpiresAt  time.Time
	AcquiredAt time.Time
	Skew       time.Duration
	Counted    bool // the backend counts refused acquisitions
	Contention lease.Contention
	Release    *Action // when the lease expired: the action that releases it
}

// readLease is the job's lease as runstatus.ReadLease judges it at now,
// with the action that releases it once expired.
func (s *Server) readLease(r *http.Request, j baton.Job, now time.Time) (leaseView, error) {
	l, err := runstatus.ReadLease(r.Context(), s.o.Backend, j.Name, j.Limits.ClockSkew, now)
	if err != nil {
		return leaseView{}, err
	}
	return newLeaseView(j, l), nil
}

// newLeaseView is j's lease l (nil: never taken) as the pages show it.
func newLeaseView(j baton.Job, l *runstatus.Lease) leaseView {
	v := leaseView{Job: j.Name, Skew: j.Limits.ClockSkew}
	if l == nil {
		return v
	}
	v.Exists, v.State, v.Owner, v.Fence, v.ExpiresAt, v.AcquiredAt = true, l.State, l.Owner, l.Fence, deref(l.ExpiresAt), deref(l.AcquiredAt)
	if l.State == "expired" {
		v.Release = &Action{Kind: ReleaseLease, Job: j.Name, Owner: l.Owner, Fence: l.Fence}
	}
	if c := l.Contention; c != nil {
		v.Counted = true
		v.Contention = lease.Contention{Job: j.Name, Count: c.Count, Last: deref(c.Last),
			Holder: lease.Lease{Job: j.Name, Owner: c.LastHolder, Fence: c.LastFence, ExpiresAt: deref(c.LastExpires)}}
	}
	return v
}

// deref is *t, the zero time for nil.
func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// runRow is a run in a job's list.
type runRow struct {
	Run        ledger.Run
	Counts     []stateCount
	TickToDone time.Duration // 0 until finished
	// Recorded: the counts are the run record's (end states only, once
	// finished; see recordRow), not its items'.
	Recorded   bool
	Items      int           // Recorded: the items fanned out so far
	OpenToDone time.Duration // Recorded: from the run's opening to its finish
}

type stateCount struct {
	State string
	N     int
}

// jobView is a job's page.
type jobView struct {
	Job       baton.Job
	Next      time.Time
	Runs      []runRow
	Missed    []MissedTick
	Lease     leaseView
	Staleness staleness
	Replay    *Action // the latest tick, to replay
	Pause     *runstatus.Pause
	Subs      submissions
	RunTime   bool
	// Limits are the job's rate limits now (hottest keys, holders,
	// waiters); Waiting the items of the runs shown that wait for their
	// next attempt, soonest first.
	Limits      []limitstatus.Limit
	Waiting     []waitingRow
	WaitingMore int // the waiting items not listed
	// Stuck are the items of the runs read that are RUNNING past their
	// lease (runstatus.Stuck): their worker died.
	Stuck []stuckRow
}

// stuckRow is an item RUNNING past its lease.
type stuckRow struct {
	Key        ledger.ItemKey
	Owner      string
	Attempt    int
	LeaseUntil time.Time
}

// waitingRow is an item waiting for its next attempt.
type waitingRow struct {
	Key         ledger.ItemKey
	Attempt     int
	NextAttempt time.Time
	WaitingOn   string // "retry delay", or the limit (and key, cut)
	Error       string
}

// waitingOn says what an item's noted wait is for, in runstatus's words.
func waitingOn(w ledger.ItemWait) string { return runstatus.NewWaitingOn(w).Text() }

func (s *Server) lookupJob(w http.ResponseWriter, r *http.Request) (baton.Job, bool) {
	j, err := s.o.Catalog.Lookup(r.PathValue("job"))
	if err != nil {
		s.fail(w, r, http.StatusNotFound, err)
		return j, false
	}
	return j, true
}

func (s *Server) jobPage(w http.ResponseWriter, r *http.Request) {
	j, ok := s.lookupJob(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	now := s.o.NowFunc().UTC()
	v := jobView{Job: j, RunTime: jobspec.RunTime(j)}
	var err error
	if v.Subs, err = s.readSubmissions(r, j.Name, s.o.Runs); err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	if sched, err := schedule.ParseIn(j.Schedule, j.TimeZone); err == nil {
		v.Next = sched.Next(now)
		if prev := sched.Prev(now); !prev.IsZero() {
			v.Replay = &Action{Kind: ReplayTick, Job: j.Name, Tick: prev}
		}
	}
	live := false
	for _, sub := range v.Subs.Runs {
		live = live || !sub.Run.State.Finished()
	}
	// The report is runstatus's, as 'baton status' and batonclient read
	// it; a run-time list may be a million items: its rows are drawn from
	// the run records, its items only on the run's page.
	var (
		runs  []ledger.Run
		byRun [][]ledger.Item
	)
	rep, err := runstatus.Read(ctx, s.o.Backend, j, runstatus.Params{Runs: s.o.Runs, History: s.o.Runs, Now: now, Records: jobspec.RunTime(j),
		RunFunc: func(rec ledger.Run, items []ledger.Item, st runstatus.Run) {
			runs, byRun = append(runs, rec), append(byRun, items)
			row := runRow{Run: rec, Counts: stateCounts(st.Items)}
			if jobspec.RunTime(j) {
				row = recordRow(rec)
			}
			if rec.State.Finished() && !rec.FinishedAt.IsZero() {
				row.TickToDone = rec.FinishedAt.Sub(rec.ID.Nominal)
			}
			live = live || !rec.State.Finished()
			v.Runs = append(v.Runs, row)
		}})
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	v.Missed = s.o.Operator.MissedTicks(j, runs, now)
	v.Pause = rep.Pause
	v.Lease = newLeaseView(j, rep.Lease)
	live = live || v.Lease.State == "held"
	v.Staleness = buildStaleness(j, runs, byRun, now)
	for _, it := range rep.Waiting {
		key, err := ledger.ParseItemKey(it.Key)
		if err != nil {
			s.fail(w, r, http.StatusInternalServerError, err)
			return
		}
		v.Waiting = append(v.Waiting, waitingRow{Key: key, Attempt: it.Attempt, NextAttempt: deref(it.NextAttempt), WaitingOn: it.WaitingOn.Text(), Error: it.Error})
	}
	v.WaitingMore = rep.WaitingMore
	v.Limits = rep.Limits
	for _, it := range rep.Stuck {
		key, err := ledger.ParseItemKey(it.Key)
		if err != nil {
			s.fail(w, r, http.StatusInternalServerError, err)
			return
		}
		v.Stuck = append(v.Stuck, stuckRow{Key: key, Owner: it.Owner, Attempt: it.Attempt, LeaseUntil: deref(it.LeaseUntil)})
	}
	s.render(w, r, http.StatusOK, "job", page{Title: j.Name, Nav: "jobs", Live: live, Now: now, Body: v})
}

// stateCounts are counts per state (runstatus.CountItems) in the order
// of the runs table's columns.
func stateCounts(counts map[string]int) []stateCount {
	out := make([]stateCount, len(runstatus.States))
	for i, st := range runstatus.States {
		out[i] = stateCount{st, counts[st]}
	}
	return out
}

// leasePageView is a job's lease page: its lease, and the application
// locks of the store.
type leasePageView struct {
	leaseView
	Locks locksView
}

// locksView is the application locks (batonlock) as the lease page shows
// them.
type locksView struct {
	Shown bool // the backend has a lock store
	// Unsupported says why the store cannot list its locks (DynamoDB
	// keeps no index of the keys); "" when Locks is the list.
	Unsupported string
	Locks       []lockRow // escalated keys first, then by key
}

// lockRow is one lock.
type lockRow struct {
	Key, Holder, Owner    string
	Fence                 int64
	AcquiredAt, ExpiresAt time.Time
	State                 string // held, expired or free
	Counted               bool   // the store counts refused acquisitions
	Contention            int64
	Streak                time.Duration
	Escalated             bool
}

// lockSkew is the clock-skew allowance the page judges a lock's holder
// live with: batonlock.DefaultSkew (a locker's own may differ).
const lockSkew = time.Second

// lockLister is the SQL lock stores' List.
type lockLister interface {
	List(ctx context.Context) ([]lease.Lease, error)
}

func (s *Server) readLocks(ctx context.Context, now time.Time) (locksView, error) {
	store := s.o.Backend.Locks
	if store == nil {
		return locksView{}, nil
	}
	v := locksView{Shown: true}
	ls, ok := store.(lockLister)
	if !ok {
		v.Unsupported = fmt.Sprintf("Listing locks is not supported on %s: it keeps no index of the lock keys (baton lock list says so too). Inspect a key with baton lock show KEY.", s.o.Backend.Name)
		return v, nil
	}
	locks, err := ls.List(ctx)
	if err != nil {
		return v, fmt.Errorf("list locks: %w", err)
	}
	counter, counted := store.(lease.ContentionCounter)
	for _, l := range locks {
		row := lockRow{Key: l.Job, Owner: l.Owner, Fence: l.Fence, AcquiredAt: l.AcquiredAt, ExpiresAt: l.ExpiresAt, Counted: counted}
		row.Holder = l.Owner
		if i := strings.LastIndexByte(l.Owner, '#'); i >= 0 {
			row.Holder = l.Owner[:i]
		}
		row.State = runstatus.LeaseState(l, lockSkew, now)
		if counted {
			c, err := counter.Contention(ctx, l.Job)
			if err != nil {
				return v, fmt.Errorf("contention of lock %s: %w", l.Job, err)
			}
			row.Contention, row.Streak, row.Escalated = c.Count, c.Streak(), c.Escalated(now)
		}
		v.Locks = append(v.Locks, row)
	}
	slices.SortStableFunc(v.Locks, func(a, b lockRow) int {
		if a.Escalated != b.Escalated {
			if a.Escalated {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Key, b.Key)
	})
	return v, nil
}

func (s *Server) leasePage(w http.ResponseWriter, r *http.Request) {
	j, ok := s.lookupJob(w, r)
	if !ok {
		return
	}
	now := s.o.NowFunc().UTC()
	v, err := s.readLease(r, j, now)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	locks, err := s.readLocks(r.Context(), now)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	s.render(w, r, http.StatusOK, "lease", page{Title: "Lease of " + j.Name, Nav: "jobs", Live: v.State == "held", Now: now, Body: leasePageView{leaseView: v, Locks: locks}})
}

// runView is a run's page.
type runView struct {
	Job          baton.Job
	ID           ledger.RunID
	Run          ledger.Run // the tick's current generation
	Current      bool       // ID is the current generation
	Timeline     timeline
	Counts       []stateCount
	Items        []itemRow
	ReplayTick   *Action
	Cancel       *Action
	DeadLetters  int // depth of the dead-letter queue, -1 when unknown
	QueueVisible int
	// Window: the run's items are its stored pages (a run-time list or a
	// submission), of which the page shows a few; nil for a job's
	// constant items, all shown.
	Window   *itemWindow
	Expected int      // the job's constant items (Window nil)
	Refusals []string // the actions the CLI refuses on this run, and why
	// Trace is the trace of the span that opened the run (Run.TraceID),
	// which its items' spans link to; nil when the record has none, and
	// for a superseded generation (its record is gone).
	Trace *traceRef
}

// pagesShown is how many stored pages of a run's item list one run page
// shows: ledger.PageItems (64) items each.
const pagesShown = 4

// itemWindow is the part of a run's stored item list a run page shows.
type itemWindow = runstatus.Window

// readWindow reads pages from..from+pagesShown-1 of run id's item list
// and the records of their items (runstatus.ReadWindow).
func (s *Server) readWindow(ctx context.Context, id ledger.RunID, from int) (*itemWindow, []ledger.Item, error) {
	return runstatus.ReadWindow(ctx, s.o.Backend.Ledger, id, from, pagesShown)
}

// listRefusals are the actions the CLI refuses on a run whose items are
// stored pages, in its words.
func listRefusals(j baton.Job, id ledger.RunID) []string {
	var out []string
	if id.Submission != "" {
		out = append(out, fmt.Sprintf("A submission has no tick to replay: submitting key %s again (baton submit) returns this run within the job's retention.", id.Submission))
	}
	out = append(out, listItemRefusal(j, id))
	return out
}

// listItemRefusal is why an item of a run whose items are stored pages
// cannot be replayed or cancelled one by one, nor the run cancelled: the
// CLI's replay item and cancel name a job's constant items.
func listItemRefusal(j baton.Job, id ledger.RunID) string {
	if id.Submission != "" {
		return fmt.Sprintf("Items of a submission are not the job's items: 'baton replay item' and 'baton cancel' name %s's constant items (%s), not a submission's, and refuse or miss these.", j.Name, strings.Join(jobspec.ItemNames(j), ", "))
	}
	return fmt.Sprintf("Job %s computes its items when its run opens: 'baton replay item' refuses to name one (replay the tick instead), and 'baton cancel' names a job's constant items, which it has none of.", j.Name)
}

type itemRow struct {
	timelineRow
	// Result is a SUCCEEDED item's result as people are shown it
	// (bounded and masked like a dead letter's reason).
	Result ledger.ResultPreview
	Replay *Action
	Cancel *Action
	// NextAttempt and WaitingOn: a waiting item's noted next attempt
	// and what for (zero: none noted).
	NextAttempt time.Time
	WaitingOn   string
	// Stuck: RUNNING past its lease (runstatus.Stuck); its worker died.
	Stuck bool
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := ledger.ParseRunID(r.URL.Query().Get("id"))
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf("id: %w", err))
		return
	}
	j, err := s.o.Catalog.Lookup(id.Job)
	if err != nil {
		s.fail(w, r, http.StatusNotFound, err)
		return
	}
	run, err := ledger.GetRunOf(ctx, s.o.Backend.Ledger, id)
	if errors.Is(err, ledger.ErrNotFound) || (err == nil && id.Generation > run.ID.Generation) {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("no run %s", id))
		return
	}
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	listed := j // the job as far as this page's items go
	var window *itemWindow
	var items []ledger.Item
	if jobspec.RunTime(j) || id.Submission != "" {
		// The items are the run's stored pages: read a few pages from
		// ?from=, never the whole run.
		from := 0
		if f := r.URL.Query().Get("from"); f != "" {
			if from, err = strconv.Atoi(f); err != nil || from < 0 {
				s.fail(w, r, http.StatusBadRequest, fmt.Errorf("from: want a page number (0 or more), got %s", strictjson.Quote(f)))
				return
			}
		}
		window, items, err = s.readWindow(ctx, id, from)
		if err != nil {
			s.fail(w, r, http.StatusInternalServerError, err)
			return
		}
		listed.Assets, listed.Derived, listed.Items = window.Names, nil, nil
	} else if items, err = s.o.Backend.Ledger.ListItems(ctx, id); err != nil {
		s.fail(w, r, http.StatusInternalServerError, fmt.Errorf("list items of %s: %w", id, err))
		return
	}
	now := s.o.NowFunc().UTC()
	v := runView{Job: j, ID: id, Run: run, Current: run.ID.Generation == id.Generation, Counts: stateCounts(runstatus.CountItems(items, jobspec.ItemNames(listed))), DeadLetters: -1,
		Window: window, Expected: len(j.Assets) + len(j.Derived)}
	if v.Current {
		v.Trace = s.traceOf(run)
	}
	shown := run
	if !v.Current {
		// Only the current generation has a run record: an older one is
		// drawn from its items, as finished.
		shown = ledger.Run{ID: id, State: ledger.RunPartial, OpenedAt: earliest(items)}
	}
	v.Timeline = buildTimeline(listed, shown, items, now)
	byAsset := make(map[string]ledger.Item, len(items))
	for _, it := range items {
		byAsset[it.Key.Asset] = it
	}
	for _, row := range v.Timeline.Rows {
		ir := itemRow{timelineRow: row}
		if it, ok := byAsset[row.Asset]; ok && it.State == ledger.ItemSucceeded {
			ir.Result = ledger.PreviewResult(it.Result)
		}
		ir.Stuck = runstatus.Stuck(byAsset[row.Asset], j.Limits.ClockSkew, now)
		if w, ok := byAsset[row.Asset].NextAttempt(); ok {
			ir.NextAttempt, ir.WaitingOn = w.At, waitingOn(w)
		}
		if v.Current && window == nil {
			terminal := ledger.ItemState(row.State).Terminal()
			ir.Replay = &Action{Kind: ReplayItem, Run: id, Asset: row.Asset, Force: terminal}
			if !terminal {
				ir.Cancel = &Action{Kind: Cancel, Run: id, Asset: row.Asset}
			}
		}
		v.Items = append(v.Items, ir)
	}
	if window != nil {
		v.Refusals = listRefusals(j, id)
	}
	if v.Current && id.Submission == "" {
		v.ReplayTick = &Action{Kind: ReplayTick, Job: j.Name, Tick: id.Nominal.UTC(), Force: run.State != ledger.RunFanningOut}
	}
	if v.Current && window == nil {
		if !run.State.Finished() {
			v.Cancel = &Action{Kind: Cancel, Run: id}
		}
	}
	if s.o.Backend.DeadLetter != nil {
		if d, err := queue.OpsOf(s.o.Backend.DeadLetter).Depth(ctx); err == nil {
			v.DeadLetters = d.Total()
		}
	}
	s.render(w, r, http.StatusOK, "run", page{Title: id.String(), Nav: "jobs", Live: v.Current && !run.State.Finished(), Now: now, Body: v})
}

// submissionPage finds the run of a job's submission by its dedupe key
// (?key=), on every engine, and redirects to its current generation.
func (s *Server) submissionPage(w http.ResponseWriter, r *http.Request) {
	j, ok := s.lookupJob(w, r)
	if !ok {
		return
	}
	key := r.URL.Query().Get("key")
	if err := baton.ValidName("submission", key); err != nil {
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf("key: %w", err))
		return
	}
	run, err := ledger.GetRunOf(r.Context(), s.o.Backend.Ledger, ledger.RunID{Job: j.Name, Submission: key, Generation: 1})
	if errors.Is(err, ledger.ErrNotFound) {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("job %s has no submission with the key %s (or it is past its retention)", j.Name, key))
		return
	}
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	http.Redirect(w, r, funcs["runURL"].(func(ledger.RunID) string)(run.ID), http.StatusSeeOther)
}

func earliest(items []ledger.Item) time.Time {
	var t time.Time
	for _, it := range items {
		if !it.CreatedAt.IsZero() && (t.IsZero() || it.CreatedAt.Before(t)) {
			t = it.CreatedAt
		}
	}
	return t
}

// dlqView is the dead-letter queue's page.
type dlqView struct {
	Configured bool
	Messages   []DeadLetter
	Redrive    *Action
	Error      string
}

func (s *Server) dlqPage(w http.ResponseWriter, r *http.Request) {
	v := dlqView{Configured: s.o.Backend.DeadLetter != nil}
	if v.Configured {
		msgs, err := s.o.Operator.DeadLetters(r.Context(), s.o.DeadLetters)
		if err != nil {
			v.Error = err.Error()
		}
		v.Messages = msgs
		if len(msgs) > 0 {
			v.Redrive = &Action{Kind: Redrive}
		}
	}
	s.render(w, r, http.StatusOK, "dlq", page{Title: "Dead letters", Nav: "dlq", Body: v})
}

// staleness is, per asset, the time from each recent tick to the item's
// success (tick-to-done), oldest run first: a small chart per asset.
type staleness struct {
	Budget  time.Duration
	Max     time.Duration // the chart's scale
	Width   float64
	Assets  []assetStaleness
	Window  int
	BudgetY float64
}

type assetStaleness struct {
	Asset       string
	LastSuccess time.Time
	Stale       time.Duration // now - the latest successful tick
	OverBudget  bool
	Bars        []stalenessBar
}

type stalenessBar struct {
	X, Y, W, H float64
	Class      string // succeeded, or the state that was not
	Title      string
}

const (
	stWidth  = 240.0
	stHeight = 36.0
)

func buildStaleness(j baton.Job, runs []ledger.Run, byRun [][]ledger.Item, now time.Time) staleness {
	st := staleness{Budget: j.StalenessBudget, Width: stWidth, Window: len(runs)}
	names := append(append([]string(nil), j.Assets...), derivedNames(j)...)
	done := map[string][]time.Duration{} // by asset, oldest first; -1: no success
	states := map[string][]string{}
	for i := len(runs) - 1; i >= 0; i-- {
		got := map[string]ledger.Item{}
		for _, it := range byRun[i] {
			got[it.Key.Asset] = it
		}
		for _, a := range names {
			it, ok := got[a]
			d := time.Duration(-1)
			state := pendingState
			if ok {
				state = string(it.State)
				if it.State == ledger.ItemSucceeded {
					d = it.FinishedAt.Sub(runs[i].ID.Nominal)
					st.Max = max(st.Max, d)
				}
			}
			done[a] = append(done[a], d)
			states[a] = append(states[a], state)
		}
	}
	st.Max = max(st.Max, st.Budget, time.Second)
	scale := func(d time.Duration) float64 { return math.Max(1, d.Seconds()/st.Max.Seconds()*stHeight) }
	if st.Budget > 0 {
		st.BudgetY = stHeight - scale(st.Budget)
	}
	barW := stWidth / float64(max(len(runs), 1))
	for _, a := range names {
		as := assetStaleness{Asset: a}
		for i, d := range done[a] {
			runIdx := len(runs) - 1 - i
			b := stalenessBar{X: float64(i)*barW + 1, W: math.Max(barW-2, 1)}
			if d >= 0 {
				b.H = scale(d)
				b.Class = "succeeded"
				if st.Budget > 0 && d > st.Budget {
					b.Class = "over"
				}
				b.Title = fmt.Sprintf("%s %s: done %s after its tick", a, runs[runIdx].ID, short(d))
				as.LastSuccess = runs[runIdx].ID.Nominal
			} else {
				b.H = stHeight
				b.Class = stateClass(states[a][i]) + " missing"
				b.Title = fmt.Sprintf("%s %s: %s", a, runs[runIdx].ID, states[a][i])
			}
			b.Y = stHeight - b.H
			as.Bars = append(as.Bars, b)
		}
		if !as.LastSuccess.IsZero() {
			as.Stale = now.Sub(as.LastSuccess)
			as.OverBudget = st.Budget > 0 && as.Stale > st.Budget
		}
		st.Assets = append(st.Assets, as)
	}
	return st
}

func derivedNames(j baton.Job) []string {
	var out []string
	for _, d := range jobspec.DerivedOrder(j) {
		out = append(out, d.Name)
	}
	return out
}
