package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/batonhq/baton/internal/fanin"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/schedule"
)

// Settle finishes the tick's run when it can; derived items found ready but
// not terminal are enqueued again (harmless when one is in flight: its
// claim dedupes). A run fanned out whose
// catalog assets (the first Total of the catalog) and derived items are
// all terminal becomes complete (all SUCCEEDED) or partial, with its
// counts. Before that check, derived items whose inputs ended DEAD or
// CANCELLED are cancelled ("input X is DEAD"), so that a run always
// settles. Settle returns the run as it is after the call: unchanged when
// it is still fanning out, has items in flight, or was already finished.
// The settle that finishes the run starts its chains (baton.Chain), as
// every settler does, so that a run finished here rather than by its
// last consumer still starts them; failing to start them is logged only.
// It returns the ledger's errors (ErrNotFound when the tick has no run)
// and an error matching baton.ErrUnknownJob for an unknown job.
func (c *Coordinator) Settle(ctx context.Context, jobName string, nominal time.Time) (ledger.Run, error) {
	fin := &fanin.Finisher{Store: c.Ledger}
	run, err := c.settle(ctx, jobName, nominal, false, false, fin)
	if err == nil && fin.Won() {
		c.chainsQuietly(ctx, c.logger(), run)
	}
	return run, err
}

// SettleRun is Settle for the current run of id's tick or submission
// (see ledger.TickOf), reading every shard: what an operator's cancel
// calls once it has cancelled the run's items.
func (c *Coordinator) SettleRun(ctx context.Context, id ledger.RunID) (ledger.Run, error) {
	j, err := c.Jobs.Lookup(id.Job)
	if err != nil {
		return ledger.Run{}, fmt.Errorf("settle: %w", err)
	}
	run, err := ledger.GetRunOf(ctx, c.Ledger, id)
	if err != nil {
		return ledger.Run{}, fmt.Errorf("settle %s: %w", jobspec.TickKey(id), err)
	}
	if run.State != ledger.RunFannedOut {
		return run, nil
	}
	fin := &fanin.Finisher{Store: c.Ledger}
	run, err = fanin.Settle(ctx, fanin.SettleParams{Ledger: fin, Queue: c.Queue, Def: j, Run: run, Sweep: true, Now: c.now()})
	if err == nil && fin.Won() {
		c.chainsQuietly(ctx, c.logger(), run)
	}
	return run, err
}

// settle is Settle; sweep reads every shard of the run (see
// fanin.SettleParams.Sweep); resend sends orphaned items again
// (fanin.SettleParams.Resend): the settles of a trigger do, once per
// invocation, not a caller that polls Settle.
// Its writes go through store (c.Ledger, or a fanin.Finisher over it).
func (c *Coordinator) settle(ctx context.Context, jobName string, nominal time.Time, sweep, resend bool, store ledger.Store) (ledger.Run, error) {
	j, err := c.Jobs.Lookup(jobName)
	if err != nil {
		return ledger.Run{}, fmt.Errorf("settle: %w", err)
	}
	run, err := c.Ledger.GetRun(ctx, jobName, nominal)
	if err != nil {
		return ledger.Run{}, fmt.Errorf("settle %s@%s: %w", jobName, nominal.UTC().Format(time.RFC3339), err)
	}
	if run.State != ledger.RunFannedOut {
		return run, nil
	}
	return fanin.Settle(ctx, fanin.SettleParams{Ledger: store, Queue: c.Queue, Def: j, Run: run, Sweep: sweep, Resend: resend, Now: c.now()})
}

// settleQuietly settles a tick in passing; failures are logged only.
func (c *Coordinator) settleQuietly(ctx context.Context, log *slog.Logger, job string, nominal time.Time, sweep bool) {
	fin := &fanin.Finisher{Store: c.Ledger}
	run, err := c.settle(ctx, job, nominal, sweep, true, fin)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
	case err != nil:
		log.WarnContext(ctx, "settle failed", slog.String("phase", "settle"), slog.Time("tick", nominal), slog.Any("error", err))
	default:
		if fanin.StartsChains(run, fin.Won(), c.now()) {
			c.chainsQuietly(ctx, log, run)
		}
		log.DebugContext(ctx, "settle", slog.String("phase", "settle"), slog.String("settled_run", run.ID.String()),
			slog.String("state", string(run.State)), slog.Int("succeeded", run.Succeeded),
			slog.Int("dead", run.Dead), slog.Int("cancelled", run.Cancelled))
	}
}

// tendPage is how many runs each page of tendRecent reads; tendMax bounds
// the runs one invocation looks at.
const (
	tendPage = 20
	tendMax  = 200
)

// tendRecent looks after the job's runs before the current tick, newest
// first, under the lease the invocation holds: a run left fanning out (a
// coordinator stopped mid fan-out, or a local runtime killed) is resumed
// from its cursor, and a run fanned out whose items have all ended is
// settled (a run whose last items were retried after a long visibility
// timeout settles on a later tick). It pages back until a whole page holds
// no unfinished run, or tendMax runs were read, or the fan-out of a
// resumed run stopped (deadline, budget): the next invocation goes on.
func (c *Coordinator) tendRecent(ctx context.Context, t *tickRun, before time.Time) {
	job := t.job.Name
	for read := 0; read < tendMax; {
		runs, err := c.Ledger.ListRuns(ctx, ledger.ListRunsParams{Job: job, Before: before, Limit: tendPage})
		if err != nil {
			t.log.WarnContext(ctx, "list runs to settle failed", slog.String("phase", "settle"), slog.Any("error", err))
			return
		}
		unfinished := 0
		for _, r := range runs {
			if len(t.job.Chains) > 0 && fanin.StartsChains(r, false, c.now()) {
				// Started by whoever finished it, unless it stopped in
				// between: past fanin.ChainGrace, start them here.
				c.chainsQuietly(ctx, t.log, r)
			}
			switch r.State {
			case ledger.RunFannedOut:
				unfinished++
				c.settleQuietly(ctx, t.log, job, r.ID.Nominal, false)
			case ledger.RunFanningOut:
				unfinished++
				if !c.runEarlier(ctx, t, r.ID.Nominal, "resuming a run left fanning out") {
					return
				}
			}
		}
		read += len(runs)
		if len(runs) < tendPage || unfinished == 0 {
			return
		}
		before = runs[len(runs)-1].ID.Nominal
	}
}

// runEarlier opens (or finds) the run of an earlier tick and fans it out
// from its cursor, under t's lease: a run left fanning out is resumed, a
// tick without a run is run (catch-up). Failures are logged only. It
// reports whether the fan-out got to its end (false: stopped or failed;
// stop going back).
func (c *Coordinator) runEarlier(ctx context.Context, t *tickRun, nominal time.Time, why string) bool {
	sum := Summary{Job: t.job.Name, Nominal: nominal, Fence: t.hold.lease.Fence, Total: len(t.job.Assets)}
	r := &tickRun{tr: Trigger{Job: t.job.Name, At: nominal, Deadline: t.tr.Deadline}, start: t.start, sum: &sum,
		job: t.job, owner: t.owner, log: t.log.With(slog.Time("earlier_tick", nominal)), hold: t.hold}
	run, outcome, err := c.open(ctx, r)
	if err == nil && outcome != ledger.AlreadyFannedOut {
		r.log.InfoContext(ctx, why, slog.String("phase", "earlier"), slog.String("outcome", string(outcome)), slog.Int("cursor", run.Cursor))
		err = c.fanOut(ctx, r, run)
	}
	if err != nil {
		t.log.WarnContext(ctx, why+" failed", slog.String("phase", "earlier"), slog.Time("tick", nominal), slog.Any("error", err))
		return false
	}
	return sum.Stopped == ""
}

// maxCatchUpTicks bounds the ticks of a catch-up window looked at.
const maxCatchUpTicks = 1000

// catchUp runs the job's missed ticks within its catch-up window (see
// baton.CatchUp): the ticks before nominal, within Window, without a run
// and after the job's first run (a job's first run catches nothing up),
// oldest first, at most MaxPerTrigger, under t's lease. With Skip, or no
// window, it does nothing (status shows the ticks skipped or missed).
func (c *Coordinator) catchUp(ctx context.Context, t *tickRun, nominal time.Time) {
	cu := t.job.CatchUp
	if cu.Window <= 0 || cu.Skip {
		return
	}
	limit := cu.MaxPerTrigger
	if limit <= 0 {
		limit = 10
	}
	sched, err := schedule.ParseIn(t.job.Schedule, t.job.TimeZone)
	if err != nil {
		return // resolve parsed it already
	}
	var ticks []time.Time // newest first
	for at := sched.Prev(nominal.Add(-time.Nanosecond)); !at.IsZero() && !at.Before(nominal.Add(-cu.Window)) && len(ticks) < maxCatchUpTicks; at = sched.Prev(at.Add(-time.Nanosecond)) {
		ticks = append(ticks, at)
	}
	if len(ticks) == 0 {
		return
	}
	// The window's runs and, past them, the newest run before the window.
	runs, err := c.Ledger.ListRuns(ctx, ledger.ListRunsParams{Job: t.job.Name, Before: nominal, Limit: len(ticks) + 1})
	if err != nil {
		t.log.WarnContext(ctx, "list runs to catch up failed", slog.String("phase", "catch-up"), slog.Any("error", err))
		return
	}
	if len(runs) == 0 {
		return // the job's first run: nothing was missed, nothing to catch up
	}
	// Missed: the window's ticks without a run after the oldest run listed
	// (runs are newest first): ticks before a job's first run were never
	// due.
	first := runs[len(runs)-1].ID.Nominal
	has := make(map[int64]bool, len(runs))
	for _, r := range runs {
		has[r.ID.Nominal.Unix()] = true
	}
	// Ticks skipped while the job was paused are not missed: resuming
	// does not run them.
	var pausedFrom, pausedTo time.Time
	if pauser, ok := lease.PauserOf(c.Leases); ok {
		if p, err := pauser.PauseOf(ctx, t.job.Name); err == nil && !p.Since.IsZero() {
			pausedFrom, pausedTo = p.Since, p.Until
		}
	}
	skippedWhilePaused := func(at time.Time) bool {
		return !pausedFrom.IsZero() && !at.Before(schedulePrev(sched, pausedFrom)) && (pausedTo.IsZero() || !at.After(pausedTo))
	}
	var missed []time.Time
	for i := len(ticks) - 1; i >= 0 && len(missed) < limit; i-- { // oldest first
		if ticks[i].After(first) && !has[ticks[i].Unix()] && !skippedWhilePaused(ticks[i]) {
			missed = append(missed, ticks[i])
		}
	}
	for _, at := range missed {
		if !c.runEarlier(ctx, t, at, "catching up a missed tick") {
			return
		}
	}
}

// schedulePrev is the tick a trigger at t would have run: the schedule's
// latest at or before t.
func schedulePrev(s schedule.Schedule, t time.Time) time.Time { return s.Prev(t) }
