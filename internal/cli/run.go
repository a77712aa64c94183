package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/jsonlog"
	"github.com/batonhq/baton/internal/lambdaapp"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/redact"
	"github.com/batonhq/baton/internal/runstatus"
	"github.com/batonhq/baton/internal/telemetry/spantree"
)

const runSynopsis = `run [--once] [--job J] [flags]

Runs the catalog's jobs on their schedules with the coordinator and a pool
of consumers in this process, as a deployment does, on the embedded store
(a SQLite file) by default: every scheduled job, or the one --job names
(a job without a schedule is refused: it has no tick).
The consumers serve every job: submissions to on-demand jobs (no
schedule) and the runs chains start are processed here too.

  --once   run the tick at the current time of each scheduled job (or of
           --job) end to end, with the runs their chains start, print a
           per-asset report (status, attempts, processing latency,
           tick-to-done latency) and the derived values, then exit: status 1
           if any item ended DEAD or a run did not settle within --timeout.
  (none)   keep going at every tick of the schedules until interrupted
           (Ctrl-C / SIGTERM): no new tick starts, items in flight finish.

If a tick already ran, --once reports that run instead of running it again
(--force opens the next generation and re-runs every item).

--trace stdout (with --once) records the tick's OpenTelemetry spans and
prints them after the report as a tree: the coordinator's invocation and
its steps (lease, open, fan-out, settle), each item's span (vouch, claim,
complete, fan-in; the derived items under the input that enqueued them)
and, on --backend aws each DynamoDB and SQS call, on --backend postgres each
statement.`

type runFlags struct {
	common    *backendFlags
	once      bool
	force     bool
	consumers int
	timeout   time.Duration
	logLevel  string
	trace     string
}

func runCommand() command {
	return command{synopsis: runSynopsis, summary: "run the job's ticks end to end (--once: one tick, then a report)",
		example: `  baton run --once
  baton run --once --json
  baton run --once --trace stdout
  baton run --consumers 8 --log info --log-format json`,
		backend: true, defineFunc: defineRun}
}

func defineRun(e *env, fs *pflag.FlagSet) runFunc {
	f := runFlags{common: &e.backend}
	fs.BoolVar(&f.once, "once", false, "run one tick, report, and exit")
	fs.BoolVar(&f.force, "force", false, "with --once: re-run the tick as a new generation if it already ran")
	fs.IntVar(&f.consumers, "consumers", 4, "batches processed at once (like the event source's maximum concurrency)")
	fs.DurationVar(&f.timeout, "timeout", 2*time.Minute, "with --once: how long to wait for the tick to settle")
	fs.StringVar(&f.logLevel, "log", "warn", "log level on stderr: debug, info, warn, error")
	fs.StringVar(&f.trace, "trace", "", "with --once: stdout prints the tick's spans as a tree after the report")
	return func(ctx context.Context, _ []string) error { return runRun(ctx, e, &f) }
}

func runRun(ctx context.Context, e *env, f *runFlags) error {
	if f.consumers < 1 {
		return usagef("--consumers must be at least 1, got %d", f.consumers)
	}
	if e.json && !f.once {
		return usagef("--json goes with --once (a report at the end); without it, use --log-format json for the logs")
	}
	switch {
	case f.trace != "" && f.trace != "stdout":
		return usagef("--trace %q: want stdout", f.trace)
	case f.trace != "" && !f.once:
		return usagef("--trace goes with --once (the tick's spans, printed at the end)")
	case f.trace != "" && e.json:
		return usagef("--trace stdout prints a tree, not JSON: drop --json, or trace with a provider of your own (docs/tracing.md)")
	}
	logger, err := e.newLogger(f.logLevel)
	if err != nil {
		return err
	}
	jobs, err := scheduledJobs(e.catalog, f.common.job)
	if err != nil {
		return err
	}
	var tp trace.TracerProvider
	var spans *spantree.Recorder
	if f.trace == "stdout" {
		provider, rec := spantree.NewProvider()
		defer provider.Shutdown(context.WithoutCancel(ctx))
		tp, spans = provider, rec
		f.common.aws.tracer, f.common.pg.tracer = tp, tp
	}
	b, err := f.common.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	eng, err := exec.New(b, exec.Options{Catalog: e.catalog, Consumers: f.consumers, Logger: logger, Telemetry: e.telemetry(b.Name, tp)})
	if err != nil {
		return err
	}
	if f.once {
		err := runOnce(ctx, e, eng, f, jobs) // its consumers have stopped: every item span has ended
		if spans != nil {
			fmt.Fprintln(e.stdout)
			spantree.Print(e.stdout, spans.Spans())
		}
		return err
	}
	return runForever(ctx, e, eng, f, jobs)
}

// scheduledJobs are the jobs run runs: the one named (which must have a
// schedule), or every job of the catalog that has one.
func scheduledJobs(c *baton.Catalog, name string) ([]string, error) {
	if name != "" {
		j, err := lookupJob(c, name)
		if err != nil {
			return nil, err
		}
		if !j.Scheduled() {
			return nil, usagef("job %s has %v: it has no tick to run; submit to it ('baton submit', which processes it in its own process), or let its parent's chain start it (run without --job serves every job)", j.Name, baton.ErrNoSchedule)
		}
		return []string{j.Name}, nil
	}
	var out []string
	for _, j := range c.Jobs() {
		if j.Scheduled() {
			out = append(out, j.Name)
		}
	}
	if len(out) == 0 {
		return nil, usagef("no job of the catalog (%s) has a schedule: they run with 'submit' or by chains", strings.Join(c.Names(), ", "))
	}
	return out, nil
}

func runOnce(ctx context.Context, e *env, eng *exec.Runtime, f *runFlags, jobs []string) error {
	consumeCtx, stopConsumers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Consume(consumeCtx) })
	defer func() { stopConsumers(); wg.Wait() }()

	if len(jobs) == 1 {
		return runOnceJob(ctx, e, eng, f, jobs[0])
	}
	// Several jobs: one section each, and with --json one object with a
	// list of each job's report.
	var failed error
	var docs []map[string]any
	for i, job := range jobs {
		if i > 0 {
			fmt.Fprintln(e.text())
		}
		saved := e.doc
		if e.json {
			e.doc = map[string]any{"messages": []string{}}
		}
		err := runOnceJob(ctx, e, eng, f, job)
		if e.json {
			e.doc["job"] = job
			if err != nil && !errors.Is(err, errFailed) {
				e.doc["error"] = err.Error()
			}
			docs = append(docs, e.doc)
			e.doc = saved
		} else if err != nil && !errors.Is(err, errFailed) {
			fmt.Fprintf(e.stderr, "%s run: job %s: %v\n", e.prog, job, err)
		}
		if err != nil && failed == nil {
			failed = errFailed
		}
	}
	e.set("jobs", docs)
	return failed
}

// runOnceJob runs the tick of job at the current time, waits for it and
// the runs its chains start, and reports them.
func runOnceJob(ctx context.Context, e *env, eng *exec.Runtime, f *runFlags, job string) error {
	trigger := time.Now()
	sum, err := eng.Trigger(ctx, job, trigger, f.force)
	if err != nil {
		return err
	}
	e.sayf("job %s, tick %s, store %s (%s)\n", sum.Job, sum.Nominal.UTC().Format(time.RFC3339), f.common.where(), eng.Backend().Name)
	e.reportSummary(sum)
	if sum.Outcome == coordinator.OutcomePaused {
		return fmt.Errorf("refused: job %s is paused; 'baton resume --job %s' ends the pause (--force runs the tick anyway)", sum.Job, sum.Job)
	}
	waitCtx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	run, items, err := eng.WaitSettled(waitCtx, sum.Job, sum.Nominal, 0)
	if err != nil && len(items) == 0 {
		return fmt.Errorf("%w (raise --timeout, or see 'baton status')", err)
	}
	fmt.Fprintln(e.text())
	e.reportItems(items, trigger)
	fmt.Fprintln(e.text())
	e.reportRun(run)
	if err != nil {
		e.set("error", err.Error())
		fmt.Fprintf(e.stderr, "%s run: %v\n", e.prog, err)
		return errFailed
	}
	dead := run.Dead
	chained, cerr := waitChained(waitCtx, eng, run)
	if len(chained) > 0 {
		fmt.Fprintln(e.text())
		for _, c := range chained {
			fmt.Fprintf(e.text(), "chained ")
			printRun(e.text(), c)
			dead += c.Dead
		}
		if e.json {
			list := make([]runStatus, len(chained))
			for i, c := range chained {
				list[i] = runstatus.NewRun(c, nil, nil)
			}
			e.set("chained", list)
		}
	}
	if cerr != nil {
		e.set("error", cerr.Error())
		fmt.Fprintf(e.stderr, "%s run: %v\n", e.prog, cerr)
		return errFailed
	}
	if dead > 0 {
		return errFailed
	}
	return nil
}

// waitChained waits for the runs run's chains start (baton.Chain), and
// theirs in turn, to finish, and returns them in the order they started.
func waitChained(ctx context.Context, eng *exec.Runtime, run ledger.Run) ([]ledger.Run, error) {
	var out []ledger.Run
	queue := []ledger.Run{run}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		j, err := eng.Catalog().Lookup(parent.ID.Job)
		if err != nil {
			return out, err
		}
		for _, ch := range j.Chains {
			if parent.State != ledger.RunComplete && !(ch.OnPartial && parent.State == ledger.RunPartial) {
				continue
			}
			id := ledger.RunID{Job: ch.Job, Submission: baton.ChainKey(parent.ID), Generation: 1}
			child, err := waitRun(ctx, eng.Backend().Ledger, id)
			if err != nil {
				return out, fmt.Errorf("chained run %s of %s: %w", id, parent.ID, err)
			}
			out = append(out, child)
			queue = append(queue, child)
		}
	}
	return out, nil
}

func runForever(ctx context.Context, e *env, eng *exec.Runtime, f *runFlags, jobs []string) error {
	fmt.Fprintf(e.stdout, "running %s on %s (%s); Ctrl-C to stop\n", jobList(jobs), f.common.where(), eng.Backend().Name)
	consumeCtx, stopConsumers := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Consume(consumeCtx) })
	wg.Go(func() { eng.Prune(consumeCtx, 0) }) // finished runs past each job's retention
	var mu sync.Mutex
	report := func(sum coordinator.Summary) {
		waitCtx, cancel := context.WithTimeout(ctx, f.timeout)
		defer cancel()
		run, _, err := eng.WaitSettled(waitCtx, sum.Job, sum.Nominal, 0)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			fmt.Fprintf(e.stdout, "%s  %s  %v\n", sum.Nominal.UTC().Format(time.RFC3339), sum.Job, err)
			return
		}
		fmt.Fprintf(e.stdout, "%s  %s  %s: %d succeeded, %d dead, %d cancelled, done %s after the tick\n",
			sum.Nominal.UTC().Format(time.RFC3339), run.ID, run.State, run.Succeeded, run.Dead, run.Cancelled,
			run.FinishedAt.Sub(sum.Nominal).Round(time.Millisecond))
	}
	errs := make(chan error, len(jobs))
	var sched sync.WaitGroup
	for _, job := range jobs {
		sched.Go(func() {
			errs <- eng.Schedule(ctx, job, func(sum coordinator.Summary, err error) {
				mu.Lock()
				if err != nil {
					fmt.Fprintf(e.stdout, "job %s: tick failed: %v\n", job, err)
					mu.Unlock()
					return
				}
				printSummary(e.stdout, sum)
				mu.Unlock()
				if sum.Outcome != coordinator.OutcomeSkipped && sum.Outcome != coordinator.OutcomePaused {
					wg.Go(func() { report(sum) })
				}
			})
		})
	}
	sched.Wait()
	close(errs)
	var all []error
	for err := range errs {
		if err != nil && ctx.Err() == nil {
			all = append(all, err)
		}
	}
	// Interrupted: no new tick starts; let in-flight batches finish (the
	// poller gives each its own deadline), then stop receiving.
	fmt.Fprintln(e.stdout, "stopping: waiting for items in flight")
	stopConsumers()
	wg.Wait()
	return errors.Join(all...)
}

func jobList(jobs []string) string {
	if len(jobs) == 1 {
		return "job " + jobs[0]
	}
	return "jobs " + strings.Join(jobs, ", ")
}

func printSummary(w io.Writer, s coordinator.Summary) {
	switch s.Outcome {
	case coordinator.OutcomeSkipped:
		if s.Holder != nil {
			fmt.Fprintf(w, "coordinator: skipped, lease held by %s until %s (fence %d)\n", s.Holder.Owner, s.Holder.ExpiresAt.UTC().Format(time.RFC3339), s.Holder.Fence)
			return
		}
		fmt.Fprintln(w, "coordinator: skipped")
	case coordinator.OutcomePaused:
		fmt.Fprintf(w, "coordinator: job %s is paused (since %s by %s); tick %s skipped and recorded (%d so far); 'baton resume' ends the pause\n",
			s.Job, rfc(s.Pause.Since), s.Pause.By, rfc(s.Nominal), s.Pause.Skipped)
	case coordinator.OutcomeAlreadyFannedOut:
		fmt.Fprintf(w, "coordinator: run %s already fanned out; reporting it (--force re-runs the tick)\n", s.Run)
	default:
		stopped := ""
		if s.Stopped != "" {
			stopped = fmt.Sprintf(", stopped early (%s) at %d of %d", s.Stopped, s.Cursor, s.Total)
		}
		fmt.Fprintf(w, "coordinator: run %s %s, fence %d, %d messages enqueued in %s (lease in %s)%s\n",
			s.Run, s.Outcome, s.Fence, s.Enqueued, fmtDur(s.Duration), fmtDur(s.AcquireLatency), stopped)
	}
}

func printItems(w io.Writer, items []ledger.Item, trigger time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ITEM\tSTATUS\tATTEMPTS\tPROCESSING\tSINCE TRIGGER\tTICK-TO-DONE\tRESULT")
	for _, it := range items {
		processing, sinceTrigger, tickToDone := "-", "-", "-"
		if !it.FinishedAt.IsZero() {
			if !it.StartedAt.IsZero() {
				processing = fmtDur(it.FinishedAt.Sub(it.StartedAt))
			}
			if it.FinishedAt.After(trigger) {
				sinceTrigger = fmtDur(it.FinishedAt.Sub(trigger))
			}
			tickToDone = fmtDur(it.FinishedAt.Sub(it.Key.Run.Nominal))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", it.Key.Asset, it.State, it.Attempt, processing, sinceTrigger, tickToDone, resultOf(it))
	}
	tw.Flush()
	for _, it := range items {
		if it.Error != "" {
			fmt.Fprintf(w, "  %s: %s\n", it.Key.Asset, it.Error)
		}
	}
}

// resultWidth is the most runes of a result the item table shows.
const resultWidth = 40

// resultOf abbreviates a succeeded item's result for the item table:
// printable text cut to resultWidth runes, else its size.
func resultOf(it ledger.Item) string {
	if it.State != ledger.ItemSucceeded || len(it.Result) == 0 {
		return "-"
	}
	s := string(it.Result)
	if !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return fmt.Sprintf("(%d bytes)", len(it.Result))
	}
	if utf8.RuneCountInString(s) > resultWidth {
		s = string([]rune(s)[:resultWidth-1]) + "…"
	}
	return s
}

func printRun(w io.Writer, r ledger.Run) {
	took := "-"
	if !r.FinishedAt.IsZero() {
		took = fmtDur(r.FinishedAt.Sub(r.OpenedAt))
	}
	fmt.Fprintf(w, "run %s: %s — %d succeeded, %d dead, %d cancelled; opened→settled %s\n",
		r.ID, r.State, r.Succeeded, r.Dead, r.Cancelled, took)
}

// newLogger returns the logger of a command: level on stderr, as text or,
// with --log-format json, JSON lines.
func (e *env) newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, usagef("--log: %q is not a level (debug, info, warn, error)", level)
	}
	if e.tel.LogHandler != nil { // the binary's own: it decides its level and format
		return slog.New(e.tel.LogHandler), nil
	}
	opts := &slog.HandlerOptions{Level: l, ReplaceAttr: redact.Attr} // no payload, result or secret in a log
	if e.logFormat == "json" {                                       // the shape of the functions' logs
		return jsonlog.New(e.stderr, jsonlog.Options{Level: l, Service: envOr(lambdaapp.EnvService, lambdaapp.DefaultService)}), nil
	}
	return slog.New(slog.NewTextHandler(e.stderr, opts)), nil
}

// fmtDur rounds d for display: microseconds below 10ms, milliseconds above.
func fmtDur(d time.Duration) string {
	if d < 10*time.Millisecond {
		return d.Round(time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}
