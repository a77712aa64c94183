package ui

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
)

// plan is what a confirmation shows: what the action will do, from the
// state as it is now.
type plan struct {
	Action   Action
	Query    string   // the action's form values, for the confirmation's POST
	Lines    []string // what will happen
	Refused  string   // the guard that refuses it now (the action may still be posted: it is refused again)
	Nothing  string   // why there is nothing to do
	Letters  []DeadLetter
	Back     string // where to go afterwards
	Fields   [][2]string
	Disabled bool // read-only
}

func (s *Server) confirmPage(w http.ResponseWriter, r *http.Request) {
	a, err := ParseAction(s.o.Catalog, r.URL.Query())
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	p, err := s.plan(r.Context(), a)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	p.Disabled = s.o.ReadOnly
	s.render(w, r, http.StatusOK, "confirm", page{Title: a.Title(), Nav: navOf(a), Body: p})
}

func navOf(a Action) string {
	if a.Kind == Redrive {
		return "dlq"
	}
	return "jobs"
}

// back is the page an action's outcome links to.
func back(a Action) string {
	switch a.Kind {
	case ReplayItem, Cancel:
		return funcs["runURL"].(func(ledger.RunID) string)(a.Run)
	case ReplayTick:
		return "/jobs/" + a.Job
	case ReleaseLease:
		return "/jobs/" + a.Job + "/lease"
	}
	return "/dlq"
}

func (s *Server) plan(ctx context.Context, a Action) (plan, error) {
	p := plan{Action: a, Back: back(a)}
	vals := a.Values()
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		p.Fields = append(p.Fields, [2]string{k, vals.Get(k)})
	}
	l := s.o.Backend.Ledger
	switch a.Kind {
	case ReplayTick:
		j, _ := s.o.Catalog.Lookup(a.Job)
		n := len(j.Assets) + len(j.Derived)
		run, err := l.GetRun(ctx, a.Job, a.Tick)
		switch {
		case errors.Is(err, ledger.ErrNotFound) && jobspec.RunTime(j):
			p.Lines = append(p.Lines, fmt.Sprintf("The tick has no run: the coordinator takes the job's lease, opens run %s#1, computes its items (the job's Items function) and fans them out.", a.Job+"@"+a.Tick.Format(time.RFC3339)))
		case errors.Is(err, ledger.ErrNotFound):
			p.Lines = append(p.Lines, fmt.Sprintf("The tick has no run: the coordinator takes the job's lease, opens run %s#1 and fans out its %d items.", a.Job+"@"+a.Tick.Format(time.RFC3339), n))
		case err != nil:
			return p, err
		case run.State == ledger.RunFanningOut && jobspec.RunTime(j):
			p.Lines = append(p.Lines, fmt.Sprintf("Run %s is still fanning out (%d sent so far): the coordinator takes the job's lease and resumes it from its stored pages.", run.ID, run.Cursor))
		case run.State == ledger.RunFanningOut:
			p.Lines = append(p.Lines, fmt.Sprintf("Run %s is still fanning out (%d of %d sent): the coordinator takes the job's lease and resumes it from there.", run.ID, run.Cursor, len(j.Assets)))
		case !a.Force:
			p.Nothing = fmt.Sprintf("Run %s is %s: without force the tick is not run again.", run.ID, run.State)
		default:
			next := run.ID
			next.Generation++
			every := fmt.Sprintf("every one of its %d items runs again", n)
			if jobspec.RunTime(j) {
				every = "its items are computed again (the job's Items function) and every one runs"
			}
			p.Lines = append(p.Lines,
				fmt.Sprintf("Opens generation %d (%s): %s.", next.Generation, next, every),
				fmt.Sprintf("Messages of %s still in flight are acknowledged as superseded; its records stay as they are.", run.ID))
			if !run.State.Finished() {
				p.Lines = append(p.Lines, fmt.Sprintf("%s is %s: items of it still running are cut short.", run.ID, run.State))
			}
		}
		p.Lines = append(p.Lines, "The replay retries for a while if another coordinator holds the job's lease, and waits for the run to settle.")
	case ReplayItem:
		if err := s.planItem(ctx, a, &p); err != nil {
			return p, err
		}
	case Cancel:
		if err := s.planCancel(ctx, a, &p); err != nil {
			return p, err
		}
	case Redrive:
		if s.o.Backend.DeadLetter == nil {
			p.Refused = "this backend has no dead-letter queue configured"
			break
		}
		msgs, err := s.o.Operator.DeadLetters(ctx, s.o.DeadLetters)
		if err != nil {
			return p, err
		}
		p.Letters = msgs
		if len(msgs) == 0 {
			p.Nothing = "The dead-letter queue is empty."
			break
		}
		p.Lines = append(p.Lines, fmt.Sprintf("Moves every message of the dead-letter queue (%d listed below) back to the work queue, oldest first. Each keeps its idempotency key: what each will do is in the last column.", len(msgs)))
	case ReleaseLease:
		j, _ := s.o.Catalog.Lookup(a.Job)
		cur, err := s.o.Backend.Leases.Inspect(ctx, a.Job)
		switch {
		case errors.Is(err, lease.ErrNotFound):
			p.Refused = fmt.Sprintf("job %s has no lease record (its coordinator never ran)", a.Job)
		case err != nil:
			return p, err
		case cur.Owner == "":
			p.Nothing = fmt.Sprintf("The lease of %s is already free (fence %d).", a.Job, cur.Fence)
		case cur.Owner != a.Owner || cur.Fence != a.Fence:
			p.Refused = fmt.Sprintf("the lease is now held by %q with fence %d, not %q with fence %d: it changed hands since the page was drawn", cur.Owner, cur.Fence, a.Owner, a.Fence)
		case cur.Held(s.o.NowFunc(), j.Limits.ClockSkew):
			p.Refused = fmt.Sprintf("%q holds the lease until %s and may be alive; an expired lease is taken over by the next trigger at once (the CLI's --force-live is not offered here)", cur.Owner, cur.ExpiresAt.UTC().Format(time.RFC3339))
		default:
			p.Lines = append(p.Lines,
				fmt.Sprintf("The lease of %s expired at %s. One conditional write takes it over as fence %d (refused if %q renewed meanwhile), then releases it.", a.Job, cur.ExpiresAt.UTC().Format(time.RFC3339), cur.Fence+1, cur.Owner),
				fmt.Sprintf("Late writes of %q conditioned on fence %d are refused from then on; the lease is free.", cur.Owner, cur.Fence))
		}
	}
	p.Query = vals.Encode()
	return p, nil
}

func (s *Server) planItem(ctx context.Context, a Action, p *plan) error {
	l := s.o.Backend.Ledger
	j, _ := s.o.Catalog.Lookup(a.Run.Job)
	run, err := ledger.GetRunOf(ctx, l, a.Run)
	if err != nil {
		return fmt.Errorf("run %s: %w", a.Run, err)
	}
	if run.ID.Generation != a.Run.Generation {
		p.Refused = fmt.Sprintf("%s is not the tick's current generation (%s is)", a.Run, run.ID)
		return nil
	}
	key := ledger.ItemKey{Run: a.Run, Asset: a.Asset}
	it, err := l.GetItem(ctx, key)
	if errors.Is(err, ledger.ErrNotFound) {
		p.Lines = append(p.Lines, fmt.Sprintf("%s has no record yet: its message is sent again and it runs.", key))
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case it.State.Terminal() && !a.Force:
		p.Nothing = fmt.Sprintf("%s is already %s (attempt %d).", key, it.State, it.Attempt)
	case it.State.Terminal():
		down := jobspec.Downstream(j, a.Asset)
		names := make([]string, len(down))
		for i, d := range down {
			names[i] = d.Name
		}
		next := a.Run
		next.Generation = run.ID.Generation + 1
		p.Lines = append(p.Lines, fmt.Sprintf("%s is %s: opens generation %d (%s); every other item's outcome is carried over unchanged, %s runs again.", key, it.State, next.Generation, next, a.Asset))
		if len(names) > 0 {
			p.Lines = append(p.Lines, "Derived items that take it as input run again too: "+strings.Join(names, ", ")+".")
		}
		if !run.State.Finished() {
			p.Refused = fmt.Sprintf("run %s is still %s: a new generation is refused while it is in flight", run.ID, run.State)
		}
	case it.State == ledger.ItemRunning && it.LeaseUntil.Add(j.Limits.ClockSkew).After(s.o.NowFunc()):
		if !a.Force {
			p.Refused = fmt.Sprintf("%s is RUNNING under a live claim of %s (attempt %d, until %s): its worker may still finish", key, it.Owner, it.Attempt, it.LeaseUntil.UTC().Format(time.RFC3339))
		} else {
			p.Lines = append(p.Lines, fmt.Sprintf("%s is RUNNING under a live claim: its message is sent anyway and retried after that claim.", key))
		}
	default:
		p.Lines = append(p.Lines, fmt.Sprintf("%s is %s (attempt %d): its message is sent again and it runs as attempt %d.", key, it.State, it.Attempt, it.Attempt+1))
	}
	return nil
}

func (s *Server) planCancel(ctx context.Context, a Action, p *plan) error {
	l := s.o.Backend.Ledger
	j, _ := s.o.Catalog.Lookup(a.Run.Job)
	run, err := ledger.GetRunOf(ctx, l, a.Run)
	if err != nil {
		return fmt.Errorf("run %s: %w", a.Run, err)
	}
	if run.ID.Generation != a.Run.Generation {
		p.Refused = fmt.Sprintf("%s is not the tick's current generation (%s is)", a.Run, run.ID)
		return nil
	}
	items, err := l.ListItems(ctx, a.Run)
	if err != nil {
		return err
	}
	state := map[string]ledger.ItemState{}
	for _, it := range items {
		state[it.Key.Asset] = it.State
	}
	targets := jobspec.ItemNames(j)
	if a.Asset != "" {
		targets = []string{a.Asset}
	}
	var cancel, keep []string
	for _, name := range targets {
		st := state[name]
		if st.Terminal() {
			keep = append(keep, fmt.Sprintf("%s (%s)", name, st))
			continue
		}
		if st == "" {
			st = pendingState
		}
		cancel = append(cancel, fmt.Sprintf("%s (%s)", name, st))
	}
	if len(cancel) == 0 {
		p.Nothing = "Every item concerned is terminal already: " + strings.Join(keep, ", ") + "."
		if a.Asset != "" && state[a.Asset] != ledger.ItemCancelled {
			p.Refused = fmt.Sprintf("%s is already %s; terminal items are never overwritten", a.Asset, state[a.Asset])
		}
		return nil
	}
	p.Lines = append(p.Lines, "Becomes CANCELLED (terminal; its messages are acknowledged without running, a running processor is stopped within a third of its lease): "+strings.Join(cancel, ", ")+".")
	if len(keep) > 0 {
		p.Lines = append(p.Lines, "Left as they are (terminal): "+strings.Join(keep, ", ")+".")
	}
	if down := downstreamOf(j, a.Asset); a.Asset != "" && len(down) > 0 {
		p.Lines = append(p.Lines, "Derived items that take it as input are cancelled in turn: "+strings.Join(down, ", ")+".")
	}
	p.Lines = append(p.Lines, "Once every item is terminal the run settles as partial.")
	return nil
}

func downstreamOf(j baton.Job, asset string) []string {
	var out []string
	for _, d := range jobspec.Downstream(j, asset) {
		out = append(out, d.Name)
	}
	return out
}

// outcomeView is the page after an action.
type outcomeView struct {
	Action Action
	OK     bool
	Status int
	Output string
	Back   string
}

// act performs a confirmed action: the session's token is required, and
// the cross-origin check has already passed.
func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	if s.o.ReadOnly {
		s.fail(w, r, http.StatusForbidden, errReadOnly)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf("form: %w", err))
		return
	}
	if !s.csrfOK(r, r.PostForm.Get("token")) {
		s.fail(w, r, http.StatusForbidden, errors.New("missing or wrong session token: open the confirmation page again"))
		return
	}
	a, err := ParseAction(s.o.Catalog, r.PostForm)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	s.o.Logger.InfoContext(r.Context(), "ui action", "action", a.Kind, "values", a.Values().Encode(), "remote", r.RemoteAddr)
	out := s.o.Operator.Do(r.Context(), a)
	s.o.Logger.InfoContext(r.Context(), "ui action done", "action", a.Kind, "exit_status", out.ExitStatus)
	status := http.StatusOK
	if out.ExitStatus != 0 {
		status = http.StatusConflict
	}
	s.render(w, r, status, "outcome", page{Title: a.Title(), Nav: navOf(a), Body: outcomeView{
		Action: a, OK: out.ExitStatus == 0, Status: out.ExitStatus, Output: out.Output, Back: back(a),
	}})
}
