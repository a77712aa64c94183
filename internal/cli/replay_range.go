package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/schedule"
)

const replayRangeSynopsis = `replay range --job J --from T1 --to T2 [--overlap MODE] [--dry-run] [flags]

Backfills every nominal tick of job J's schedule in [T1, T2): from T1
included to T2 excluded (RFC 3339, not in the future), oldest first, each
through the same coordinator as a scheduled trigger, at most --rate ticks
per second. A day of a rate(1 minute) job is --from 2026-11-21T00:00:00Z
--to 2026-11-22T00:00:00Z: 1,440 ticks, and the next day starts where it
ends.

Resumable: a tick whose run already finished is never run again, so after
an interruption (Ctrl-C, a crash, --timeout) the same command picks up
where it stopped. A tick whose fan-out was interrupted is resumed from its
cursor (with --overlap skip too: every coordinator invocation of a job
resumes its earlier runs left fanning out).

--overlap says what to do about runs that overlap in time:
  buffer  (default) fire a tick only once the previous tick's run has
          settled: at most one tick of the backfill in flight. A tick
          already in flight (e.g. the live schedule's) is waited for.
  allow   fire every tick at --rate without waiting for earlier ones to
          settle; many ticks' items are in flight at once. Waits for all
          of them at the end (unless --wait=false).
  skip    like allow, but fire only ticks with no run at all: a tick that
          already has a run in any state is not fired again. For filling
          holes beside a live schedule. (A run left fanning out is still
          resumed: any coordinator invocation of the job resumes those.)

--dry-run lists the ticks, their runs' states and what would happen, and
changes nothing. A range holding more than --max-ticks ticks is refused
with the count. Progress (ticks done, items done, rate, ETA) goes to
stderr: a bar on a terminal, else a line every second.

Exit status: 0 when every tick run settled complete; 1 when a run ended
partial, did not settle within --timeout, a tick could not take the lease,
or the backfill was interrupted (run it again to resume); 2 for bad usage
or input (bad or future times, an inverted or too large range).`

// Overlap modes.
const (
	overlapSkip   = "skip"
	overlapBuffer = "buffer"
	overlapAllow  = "allow"
)

type rangeFlags struct {
	replayFlags
	from, to string
	overlap  string
	dryRun   bool
	rate     float64
	maxTicks int
}

// tickPlan is one tick of the range and what the backfill does with it.
type tickPlan struct {
	nominal time.Time
	run     *ledger.Run // nil: no run yet
	action  string
}

// Actions of a tick plan.
const (
	actionRun    = "run"
	actionResume = "resume fan-out"
	actionAwait  = "in flight: wait"
	actionDone   = "skip: done"
	actionExists = "skip: run exists"
)

func defineReplayRange(e *env, fs *pflag.FlagSet) runFunc {
	var f rangeFlags
	f.register(e, fs)
	fs.StringVar(&f.from, "from", "", "start of the range, RFC 3339 (included)")
	fs.StringVar(&f.to, "to", "", "end of the range, RFC 3339 (excluded)")
	fs.StringVar(&f.overlap, "overlap", overlapBuffer, "buffer, allow or skip (see above)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "list the ticks and what would happen; change nothing")
	fs.Float64Var(&f.rate, "rate", 2, "at most this many ticks fired per second")
	fs.IntVar(&f.maxTicks, "max-ticks", 1440, "refuse ranges holding more ticks than this")
	return func(ctx context.Context, _ []string) error { return replayRange(ctx, e, &f) }
}

func replayRange(ctx context.Context, e *env, f *rangeFlags) error {
	if err := f.check(); err != nil {
		return err
	}
	switch {
	case f.overlap != overlapSkip && f.overlap != overlapBuffer && f.overlap != overlapAllow:
		return usagef("--overlap %q: want buffer, allow or skip", f.overlap)
	case !(f.rate > 0) || f.rate > 1000:
		return usagef("--rate must be in (0, 1000] ticks per second, got %g", f.rate)
	case f.maxTicks < 1:
		return usagef("--max-ticks must be at least 1, got %d", f.maxTicks)
	case f.overlap == overlapBuffer && !f.wait:
		return usagef("--overlap buffer waits for every tick; --wait=false goes with --overlap allow or skip")
	}
	j, err := lookupJob(e.catalog, f.common.job)
	if err != nil {
		return err
	}
	now := time.Now()
	from, err := parseTime("from", f.from, now)
	if err != nil {
		return err
	}
	to, err := parseTime("to", f.to, now)
	if err != nil {
		return err
	}
	if to.Before(from) {
		return usagef("inverted range: --to %s is before --from %s", rfc(to), rfc(from))
	}
	if to.Equal(from) {
		return usagef("empty range: --to is excluded and equals --from %s (a day is --from D --to D+24h)", rfc(from))
	}
	sched, err := scheduleOf(j)
	if err != nil {
		return err
	}
	last := to.Add(-time.Nanosecond) // --to is excluded
	ticks, err := sched.Ticks(from, last, f.maxTicks)
	if errors.Is(err, schedule.ErrTooManyTicks) {
		// Say the range as it was given: [from, to).
		msg := strings.Replace(err.Error(), ", "+last.UTC().Format(time.RFC3339Nano)+"]", ", "+rfc(to)+")", 1)
		return usagef("refused: %s; split the range or raise --max-ticks", msg)
	}
	if err != nil {
		return usagef("%v", err)
	}
	if len(ticks) == 0 {
		e.sayf("no tick of %s in [%s, %s); nothing to do\n", j.Schedule, rfc(from), rfc(to))
		return nil
	}

	r, err := f.start(ctx, e, j.Name, f.wait && !f.dryRun)
	if err != nil {
		return err
	}
	defer r.close()
	plans := make([]tickPlan, len(ticks))
	for i, t := range ticks {
		if plans[i], err = planTick(ctx, r.b.Ledger, j, t, f.overlap); err != nil {
			return err
		}
	}
	if f.dryRun {
		printPlans(e, j, plans, f.overlap, from, to)
		return nil
	}
	return backfill(ctx, e, r, f, plans)
}

// planTick reads the tick's run and decides the action under overlap.
func planTick(ctx context.Context, l ledger.Store, j baton.Job, nominal time.Time, overlap string) (tickPlan, error) {
	p := tickPlan{nominal: nominal}
	run, err := l.GetRun(ctx, j.Name, nominal)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		p.action = actionRun
		return p, nil
	case err != nil:
		return p, fmt.Errorf("read tick %s: %w", rfc(nominal), err)
	}
	p.run = &run
	switch {
	case run.State.Finished():
		p.action = actionDone
	case overlap == overlapSkip:
		p.action = actionExists
	case run.State == ledger.RunFanningOut:
		p.action = actionResume
	default:
		p.action = actionAwait
	}
	return p, nil
}

func (p tickPlan) skipped() bool { return p.action == actionDone || p.action == actionExists }

func printPlans(e *env, j baton.Job, plans []tickPlan, overlap string, from, to time.Time) {
	counts := map[string]int{}
	tw := tabwriter.NewWriter(e.text(), 0, 0, 2, ' ', 0)
	type planReport struct {
		Tick   time.Time `json:"tick"`
		Run    string    `json:"run,omitempty"`
		State  string    `json:"state,omitempty"`
		Action string    `json:"action"`
	}
	list := make([]planReport, 0, len(plans))
	fmt.Fprintln(tw, "TICK\tRUN\tSTATE\tACTION")
	for _, p := range plans {
		counts[p.action]++
		id, state := "-", "-"
		if p.run != nil {
			id, state = p.run.ID.String(), string(p.run.State)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", rfc(p.nominal), id, state, p.action)
		pr := planReport{Tick: p.nominal.UTC(), Action: p.action}
		if p.run != nil {
			pr.Run, pr.State = id, state
		}
		list = append(list, pr)
	}
	tw.Flush()
	e.set("ticks", list)
	e.sayf("dry run: %d ticks of %s in [%s, %s) with --overlap %s: %d to run, %d to resume, %d in flight to wait for, %d done, %d left alone (run exists); nothing changed\n",
		len(plans), j.Schedule, rfc(from), rfc(to), overlap, counts[actionRun], counts[actionResume], counts[actionAwait], counts[actionDone], counts[actionExists])
}

// backfill fires the ticks of plans that are not skipped.
func backfill(ctx context.Context, e *env, r *replayer, f *rangeFlags, plans []tickPlan) error {
	var todo []tickPlan
	skippedDone, skippedExisting := 0, 0
	for _, p := range plans {
		switch p.action {
		case actionDone:
			skippedDone++
		case actionExists:
			skippedExisting++
		default:
			todo = append(todo, p)
		}
	}
	perTick := len(jobspec.ItemNames(r.j))
	e.sayf("backfill %s: %d ticks in range; %d already done, %d left alone (--overlap %s), %d to run at most %g/s on %s store %s\n",
		r.j.Name, len(plans), skippedDone, skippedExisting, f.overlap, len(todo), f.rate, r.b.Name, f.common.where())
	if len(todo) == 0 {
		e.sayf("nothing to do\n")
		return nil
	}

	start := time.Now()
	prog := newProgress(e.stderr, len(todo), len(todo)*perTick, start)
	watch := &settleWatch{r: r, stall: f.timeout}
	lim := newLimiter(f.rate)
	var (
		fired, doneMeanwhile int
		notRun               []string
		stopErr              error
		lastPoll             time.Time
	)
	report := func() {
		ticks := doneMeanwhile + watch.settled
		if !f.wait {
			ticks = doneMeanwhile + fired
		}
		prog.set(ticks, watch.terminal, time.Now())
	}
	for _, p := range todo {
		// Look again: the schedule or another backfill may have run it.
		cur, err := planTick(ctx, r.b.Ledger, r.j, p.nominal, f.overlap)
		if err != nil {
			stopErr = err
			break
		}
		if cur.skipped() {
			doneMeanwhile++
			report()
			continue
		}
		if err := sleep(ctx, lim.delay(time.Now())); err != nil {
			stopErr = err
			break
		}
		sum, err := r.trigger(ctx, p.nominal, false, f.leaseWait)
		if err != nil {
			stopErr = fmt.Errorf("tick %s: %w", rfc(p.nominal), err)
			break
		}
		if sum.Outcome == coordinator.OutcomePaused {
			notRun = append(notRun, fmt.Sprintf("%s (job paused: 'baton resume --job %s' first)", rfc(p.nominal), r.j.Name))
			doneMeanwhile++
			report()
			continue
		}
		if sum.Outcome == coordinator.OutcomeSkipped && sum.Pending {
			notRun = append(notRun, fmt.Sprintf("%s (%v)", rfc(p.nominal), heldError(sum)))
			doneMeanwhile++ // counted so that the ETA stays honest; reported below
			report()
			continue
		}
		fired++
		if !f.wait {
			report()
			continue
		}
		watch.add(p.nominal)
		if f.overlap == overlapBuffer {
			if err := watch.wait(ctx, report); err != nil {
				stopErr = fmt.Errorf("tick %s: %w", rfc(p.nominal), err)
				break
			}
			continue
		}
		if time.Since(lastPoll) > 500*time.Millisecond {
			if err := watch.poll(ctx); err != nil {
				stopErr = err
				break
			}
			lastPoll = time.Now()
		}
		report()
	}
	if stopErr == nil && f.wait {
		stopErr = watch.wait(ctx, report)
	}
	report()
	prog.done(time.Now())
	return backfillReport(e, r, watch, f, fired, notRun, stopErr)
}

// backfillReport prints the outcome and chooses the exit status.
func backfillReport(e *env, r *replayer, w *settleWatch, f *rangeFlags, fired int, notRun []string, stopErr error) error {
	var complete, partial, open int
	var partials []string
	for _, n := range w.order {
		run := w.runs[n]
		switch {
		case run.State == ledger.RunComplete:
			complete++
		case run.State == ledger.RunPartial:
			partial++
			partials = append(partials, fmt.Sprintf("%s (%d dead, %d cancelled)", run.ID, run.Dead, run.Cancelled))
		default:
			open++
		}
	}
	if !f.wait {
		e.sayf("fired %d ticks without waiting; 'baton status --job %s' follows them\n", fired, r.j.Name)
	} else {
		e.sayf("fired %d ticks: %d complete, %d partial, %d not settled\n", fired, complete, partial, open)
	}
	for _, p := range partials {
		e.sayf("  partial: %s\n", p)
	}
	for _, n := range notRun {
		e.sayf("  not run: %s\n", n)
	}
	e.set("fired", fired)
	e.set("complete", complete)
	e.set("partial", partial)
	e.set("not_settled", open)
	e.set("not_run", notRun)
	failed := partial > 0 || open > 0 || len(notRun) > 0
	if stopErr != nil {
		fmt.Fprintf(e.stderr, "baton replay range: stopped: %v\n", stopErr)
		e.set("error", "stopped: "+stopErr.Error())
		failed = true
	}
	if failed {
		if stopErr != nil || open > 0 || len(notRun) > 0 {
			e.sayf("run the same command again to resume: finished ticks are skipped\n")
		}
		return errFailed
	}
	return nil
}

// scheduleOf parses j's schedule.
func scheduleOf(j baton.Job) (schedule.Schedule, error) {
	if !j.Scheduled() {
		return schedule.Schedule{}, usagef("job %s has %v: it has no ticks to replay; it runs on demand ('baton submit', 'replay submission') or by its parent's chain", j.Name, baton.ErrNoSchedule)
	}
	s, err := schedule.ParseIn(j.Schedule, j.TimeZone)
	if err != nil {
		return schedule.Schedule{}, fmt.Errorf("job %s: %w", j.Name, err)
	}
	return s, nil
}
