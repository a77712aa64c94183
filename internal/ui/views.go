package ui

import (
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/schedule"
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
}

// itemStates are the columns of the runs table, in lifecycle order.
var itemStates = []string{pendingState, string(ledger.ItemRunning), string(ledger.ItemFailed),
	string(ledger.ItemSucceeded), string(ledger.ItemDead), string(ledger.ItemCancelled)}

// jobRow is a job on the front page.
type jobRow struct {
	Name, Schedule string
	Next, Prev     time.Time
	Latest         *ledger.Run
	Lease          leaseView
	Items          int
}

func (s *Server) jobsPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	now := s.o.NowFunc().UTC()
	var rows []jobRow
	live := false
	for _, j := range s.o.Catalog.Jobs() {
		row := jobRow{Name: j.Name, Schedule: j.Schedule, Items: len(j.Assets) + len(j.Derived)}
		if sched, err := schedule.Parse(j.Schedule); err == nil {
			row.Next, row.Prev = sched.Next(now), sched.Prev(now)
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

func (s *Server) readLease(r *http.Request, j baton.Job, now time.Time) (leaseView, error) {
	v := leaseView{Job: j.Name, Skew: j.Limits.ClockSkew}
	l, err := s.o.Backend.Leases.Inspect(r.Context(), j.Name)
	if errors.Is(err, lease.ErrNotFound) {
		return v, nil
	}
	if err != nil {
		return v, fmt.Errorf("inspect lease of %s: %w", j.Name, err)
	}
	v.Exists, v.Owner, v.Fence, v.ExpiresAt, v.AcquiredAt = true, l.Owner, l.Fence, l.ExpiresAt, l.AcquiredAt
	switch {
	case l.Owner == "":
		v.State = "free"
	case l.Held(now, j.Limits.ClockSkew):
		v.State = "held"
	default:
		v.State = "expired"
		v.Release = &Action{Kind: ReleaseLease, Job: j.Name, Owner: l.Owner, Fence: l.Fence}
	}
	if counter, ok := s.o.Backend.Leases.(lease.ContentionCounter); ok {
		c, err := counter.Contention(r.Context(), j.Name)
		if err != nil {
			return v, fmt.Errorf("contention of %s: %w", j.Name, err)
		}
		v.Counted, v.Contention = true, c
	}
	return v, nil
}

// runRow is a run in a job's list.
type runRow struct {
	Run        ledger.Run
	Counts     []stateCount
	TickToDone time.Duration // 0 until finished
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
}

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
	v := jobView{Job: j}
	if sched, err := schedule.Parse(j.Schedule); err == nil {
		v.Next = sched.Next(now)
		if prev := sched.Prev(now); !prev.IsZero() {
			v.Replay = &Action{Kind: ReplayTick, Job: j.Name, Tick: prev}
		}
	}
	runs, err := s.o.Backend.Ledger.ListRuns(ctx, ledger.ListRunsParams{Job: j.Name, Limit: s.o.Runs})
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, fmt.Errorf("list runs of %s: %w", j.Name, err))
		return
	}
	live := false
	byRun := make([][]ledger.Item, len(runs))
	for i, run := range runs {
		items, err := s.o.Backend.Ledger.ListItems(ctx, run.ID)
		if err != nil {
			s.fail(w, r, http.StatusInternalServerError, fmt.Errorf("list items of %s: %w", run.ID, err))
			return
		}
		byRun[i] = items
		row := runRow{Run: run, Counts: countStates(j, items)}
		if run.State.Finished() && !run.FinishedAt.IsZero() {
			row.TickToDone = run.FinishedAt.Sub(run.ID.Nominal)
		}
		live = live || !run.State.Finished()
		v.Runs = append(v.Runs, row)
	}
	v.Missed = s.o.Operator.MissedTicks(j, runs, now)
	if v.Lease, err = s.readLease(r, j, now); err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	live = live || v.Lease.State == "held"
	v.Staleness = buildStaleness(j, runs, byRun, now)
	s.render(w, r, http.StatusOK, "job", page{Title: j.Name, Nav: "jobs", Live: live, Now: now, Body: v})
}

// countStates counts j's items per state; expected items without a
// record are PENDING.
func countStates(j baton.Job, items []ledger.Item) []stateCount {
	n := map[string]int{}
	for _, it := range items {
		n[string(it.State)]++
	}
	n[pendingState] = len(j.Assets) + len(j.Derived) - len(items)
	out := make([]stateCount, len(itemStates))
	for i, st := range itemStates {
		out[i] = stateCount{st, max(n[st], 0)}
	}
	return out
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
	s.render(w, r, http.StatusOK, "lease", page{Title: "Lease of " + j.Name, Nav: "jobs", Live: v.State == "held", Now: now, Body: v})
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
}

type itemRow struct {
	timelineRow
	Replay *Action
	Cancel *Action
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
	items, err := s.o.Backend.Ledger.ListItems(ctx, id)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, fmt.Errorf("list items of %s: %w", id, err))
		return
	}
	now := s.o.NowFunc().UTC()
	v := runView{Job: j, ID: id, Run: run, Current: run.ID.Generation == id.Generation, Counts: countStates(j, items), DeadLetters: -1}
	shown := run
	if !v.Current {
		// Only the current generation has a run record: an older one is
		// drawn from its items, as finished.
		shown = ledger.Run{ID: id, State: ledger.RunPartial, OpenedAt: earliest(items)}
	}
	v.Timeline = buildTimeline(j, shown, items, now)
	for _, row := range v.Timeline.Rows {
		ir := itemRow{timelineRow: row}
		if v.Current {
			terminal := ledger.ItemState(row.State).Terminal()
			ir.Replay = &Action{Kind: ReplayItem, Run: id, Asset: row.Asset, Force: terminal}
			if !terminal {
				ir.Cancel = &Action{Kind: Cancel, Run: id, Asset: row.Asset}
			}
		}
		v.Items = append(v.Items, ir)
	}
	if v.Current {
		v.ReplayTick = &Action{Kind: ReplayTick, Job: j.Name, Tick: id.Nominal.UTC(), Force: run.State != ledger.RunFanningOut}
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
	for _, d := range j.DerivedOrder() {
		out = append(out, d.Name)
	}
	return out
}
