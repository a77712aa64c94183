package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/limitstatus"
	"github.com/batonhq/baton/internal/runstatus"
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
		if !runID.Nominal.IsZero() || runID.Submitted() {
			// An unknown run is bad input, named as such.
			if _, err := currentRun(ctx, b.Ledger, runID); err != nil && !errors.Is(err, errSuperseded) {
				return err
			}
		}
		rep, err := runstatus.Read(ctx, b, j, runstatus.Params{Run: runID, Runs: f.runs, History: f.history, Now: now})
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
			e.custom = runstatus.Catalog{Backend: b.Name, Store: f.common.where(), Now: now, Jobs: reps}
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

// The report's types are runstatus's, which computes it for the CLI, the
// dashboard and batonclient alike; status prints them.
type (
	statusReport = runstatus.Report
	leaseStatus  = runstatus.Lease
	pauseStatus  = runstatus.Pause
	runStatus    = runstatus.Run
	itemStatus   = runstatus.Item
	tickGap      = runstatus.TickGap
	waitingOn    = runstatus.WaitingOn
)

// pending is the state status reports for an expected item without a
// record (or never attempted).
const pending = runstatus.Pending

// preview is s's result as ledger.PreviewResult made it.
func preview(s itemStatus) ledger.ResultPreview {
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
	fmt.Fprintf(tw, "RUN\tSTATE\t%s\tSUPERSEDED\tSETTLED AFTER\n", strings.Join(runstatus.States, "\t"))
	for _, r := range runs {
		settled := "-"
		if r.FinishedAt != nil {
			settled = ago(r.FinishedAt.Sub(r.Nominal))
		}
		cols := make([]string, len(runstatus.States))
		for i, s := range runstatus.States {
			cols[i] = fmt.Sprint(r.Items[s])
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", r.ID, r.State, strings.Join(cols, "\t"), r.Superseded, settled)
	}
	tw.Flush()
}

func printSubmissions(w io.Writer, subs []runstatus.Submission) {
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

func printAssets(w io.Writer, assets []runstatus.Asset, now time.Time) {
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

func printRunDetail(w io.Writer, d *runstatus.RunDetail) {
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
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", s.Asset, state, s.Attempt, owner, until, finished, preview(s).Line(resultWidth), s.Error)
	}
	tw.Flush()
	counts := make([]string, 0, len(runstatus.States))
	for _, s := range runstatus.States {
		if n := d.Items[s]; n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, s))
		}
	}
	fmt.Fprintf(w, "items: %s\n", strings.Join(counts, ", "))
	for _, s := range d.ItemList {
		if s.NextAttempt != nil {
			fmt.Fprintf(w, "waiting: %s, next attempt %s, on %s\n", s.Asset, rfc(*s.NextAttempt), s.WaitingOn.Text())
		}
	}
	if d.Run.Superseded > 0 {
		fmt.Fprintf(w, "superseded: %d items of earlier generations acknowledged as superseded\n", d.Run.Superseded)
	}
}

func printQueues(w io.Writer, qs []runstatus.Queue) {
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

func printGaps(w io.Writer, gaps []runstatus.TickGap) {
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
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", s.Key, s.Attempt, nextAttempt(s.NextAttempt, now), s.WaitingOn.Text(), orDash(s.Error))
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
