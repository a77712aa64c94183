package cli

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/ops"
)

const replayAbout = `Run ticks and items again, through the same coordinator and consumer code
as the schedule. Replays are idempotent: a tick whose run finished is not
run again, and an item already SUCCEEDED is not processed again, unless
--force asks for a new generation.

On the embedded store and on PostgreSQL, replay runs 4 consumers in this
process while it waits, since there may be no other (a 'baton run' or
'baton serve' consuming at the same time is fine: claims are per item);
with --backend aws the deployed consumers process the messages and replay
only waits (--consumers adds some in this process; --consumers 0 runs none).`

func replaySubcommands() []command {
	return []command{
		{synopsis: replayTickSynopsis, summary: "run one tick again (--force: as a new generation)", backend: true, defineFunc: defineReplayTick,
			example: "  baton replay tick --at 2026-11-21T12:01:00Z\n  baton replay tick --at 2026-11-21T12:01:00Z --force --json"},
		{synopsis: replayRangeSynopsis, summary: "backfill every tick of a time range [--from, --to), oldest first", backend: true, defineFunc: defineReplayRange,
			example: "  baton replay range --from 2026-11-21T00:00:00Z --to 2026-11-22T00:00:00Z --dry-run   # one day: 1,440 ticks\n  baton replay range --from 2026-11-21T12:00:00Z --to 2026-11-21T13:00:00Z --overlap skip --json"},
		{synopsis: replayItemSynopsis, summary: "run one item of a run again (--force: as a new generation)", backend: true, defineFunc: defineReplayItem,
			example: "  baton replay item --run fx@2026-11-21T12:01:00Z#1 --asset EURUSD"},
		{synopsis: replaySubmissionSynopsis, summary: "run a finished submission again as its next generation, with its stored items", backend: true, defineFunc: defineReplaySubmission,
			example: "  baton replay submission --job fx --key desk-42\n  baton replay submission --job fx --key desk-42 --wait=false --json"},
		{synopsis: replayEventSynopsis, summary: "replay a Lambda event file through its handler, in process", backend: true, positional: true, defineFunc: defineReplayEvent,
			example: "  baton replay event events/coordinator-scheduled.json\n  baton replay event events/consumer-batch.json --json"},
	}
}

// replayFlags are the flags every replay subcommand shares.
type replayFlags struct {
	common    *backendFlags
	consumers int
	timeout   time.Duration
	wait      bool
	leaseWait time.Duration
	logLevel  string
}

func (f *replayFlags) register(e *env, fs *pflag.FlagSet) {
	f.common = &e.backend
	fs.IntVar(&f.consumers, "consumers", -1, "batches consumed at once in this process while waiting (default: 4 on sqlite and postgres, 0 on aws, where the deployed consumers work)")
	fs.DurationVar(&f.timeout, "timeout", 2*time.Minute, "give up waiting when no item has finished for this long")
	fs.BoolVar(&f.wait, "wait", true, "wait for the runs to settle and report them (--wait=false: enqueue and exit)")
	fs.DurationVar(&f.leaseWait, "lease-wait", 30*time.Second, "keep retrying a tick this long while another coordinator holds the job's lease")
	fs.StringVar(&f.logLevel, "log", "warn", "log level on stderr: debug, info, warn, error")
}

func (f *replayFlags) check() error {
	switch {
	case f.consumers < -1:
		return usagef("--consumers must not be negative, got %d", f.consumers)
	case f.timeout <= 0:
		return usagef("--timeout must be positive, got %s", f.timeout)
	case f.leaseWait < 0:
		return usagef("--lease-wait must not be negative, got %s", f.leaseWait)
	}
	return nil
}

// replayer is an open backend with an engine, and consumers when asked.
type replayer struct {
	b   backend.Backend
	eng *exec.Runtime
	j   baton.Job
	// consumers is the number of in-process consumers consume runs.
	consumers int
	stopFunc  func()
}

// start opens the backend and the engine for job jobName; with consume,
// it runs the in-process consumers until close.
func (f *replayFlags) start(ctx context.Context, e *env, jobName string, consume bool) (*replayer, error) {
	logger, err := e.newLogger(f.logLevel)
	if err != nil {
		return nil, err
	}
	j, err := lookupJob(e.catalog, jobName)
	if err != nil {
		return nil, err
	}
	b, err := f.common.open(ctx)
	if err != nil {
		return nil, err
	}
	consumers := f.consumers
	if consumers < 0 {
		consumers = defaultReplayConsumers(b.Name)
	}
	eng, err := exec.New(b, exec.Options{Catalog: e.catalog, Consumers: max(consumers, 1), Logger: logger, Owner: "replay:" + operatorOwner(),
		Telemetry: e.telemetry(b.Name, nil)})
	if err != nil {
		b.Close()
		return nil, err
	}
	r := &replayer{b: b, eng: eng, j: j, consumers: consumers, stopFunc: func() {}}
	if consume {
		r.consume(ctx)
	}
	return r, nil
}

// defaultReplayConsumers is how many consumers a replay runs in its own
// process on the backend called name: none on AWS, whose deployed
// consumers take the messages; some on the embedded store and PostgreSQL,
// where consumers run only in baton's own processes and none may be
// running (extra ones are harmless: receives never share a message, and
// claims are per item).
func defaultReplayConsumers(name string) int {
	if name == "aws" {
		return 0
	}
	return 4
}

// consume runs the in-process consumers, if any, until close.
func (r *replayer) consume(ctx context.Context) {
	if r.consumers <= 0 {
		return
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.eng.Consume(cctx) })
	r.stopFunc = func() { cancel(); wg.Wait() }
}

func (r *replayer) close() {
	r.stopFunc()
	r.b.Close()
}

// trigger runs the tick at nominal as ops.Operator.ReplayTick does,
// retrying up to leaseWait while another coordinator holds the lease.
func (r *replayer) trigger(ctx context.Context, nominal time.Time, force bool, leaseWait time.Duration) (coordinator.Summary, error) {
	op, err := ops.New(r.b, r.eng.Catalog(), &ops.Options{Engine: r.eng})
	if err != nil {
		return coordinator.Summary{}, err
	}
	return op.ReplayTick(ctx, ops.TickReplayParams{Job: r.j.Name, Nominal: nominal, Force: force, LeaseWait: leaseWait})
}

// jitter returns a wait in [d/2, d] (ops.Jitter).
var jitter = ops.Jitter

// sleep waits d or until ctx is done (ops.Sleep).
var sleep = ops.Sleep

// heldError explains a skipped trigger.
func heldError(sum coordinator.Summary) error {
	if sum.Holder == nil {
		return errors.New("the job's lease is held by another coordinator; try again")
	}
	h := sum.Holder
	return fmt.Errorf("the job's lease is held by %q (fence %d) until %s: another coordinator is running this job; "+
		"try again once it is done ('baton lease show --job %s')", h.Owner, h.Fence, rfc(h.ExpiresAt), sum.Job)
}

const replayTickSynopsis = `replay tick --job J --at T [--force] [flags]

Runs the tick of job J at time T (RFC 3339; the schedule's latest tick at or
before T) exactly as the schedule would: the coordinator takes the job's
lease, opens or resumes the tick's run and fans it out; consumers process
the items. A tick whose run is fanned out or finished is not run again
(the command says so and exits 0); --force opens the tick's next generation
and re-runs every item. T must not be in the future. A job without a
schedule (on demand, or chained) has no ticks: it is refused (exit status
2); 'replay submission' runs a submission again.

Exit status: 0 when the run settles complete (or there was nothing to do),
1 when an item ended DEAD, the run did not settle within --timeout, or
another coordinator held the lease; 2 for bad usage or input.`

func defineReplayTick(e *env, fs *pflag.FlagSet) runFunc {
	var f replayFlags
	var at string
	var force bool
	f.register(e, fs)
	fs.StringVar(&at, "at", "", "the tick's time, RFC 3339 (e.g. 2026-11-21T12:01:00Z)")
	fs.BoolVar(&force, "force", false, "run the tick again as a new generation even if it already ran")
	return func(ctx context.Context, _ []string) error { return replayTick(ctx, e, &f, at, force) }
}

func replayTick(ctx context.Context, e *env, f *replayFlags, at string, force bool) error {
	if err := f.check(); err != nil {
		return err
	}
	j, err := lookupJob(e.catalog, f.common.job)
	if err != nil {
		return err
	}
	t, err := parseTime("at", at, time.Now())
	if err != nil {
		return err
	}
	nominal, err := nominalAt(j, t, "--at "+at)
	if err != nil {
		return err
	}
	r, err := f.start(ctx, e, j.Name, f.wait)
	if err != nil {
		return err
	}
	defer r.close()

	sum, err := r.trigger(ctx, nominal, force, f.leaseWait)
	if err != nil {
		return err
	}
	e.sayf("job %s, tick %s (%s store %s)\n", j.Name, rfc(nominal), r.b.Name, f.common.where())
	if sum.Outcome == coordinator.OutcomeSkipped && sum.Pending {
		return heldError(sum)
	}
	e.reportSummary(sum)
	if sum.Outcome == coordinator.OutcomePaused {
		return fmt.Errorf("refused: job %s is paused; 'baton resume --job %s' ends the pause, or --force runs this tick anyway", j.Name, j.Name)
	}
	if sum.Outcome == coordinator.OutcomeAlreadyFannedOut || sum.Outcome == coordinator.OutcomeSkipped {
		run, err := r.eng.Coordinator.Settle(ctx, j.Name, nominal)
		if err != nil {
			return err
		}
		if run.State.Finished() {
			e.reportRun(run)
			e.sayf("nothing to do: the tick already ran (--force runs it again as generation %d)\n", run.ID.Generation+1)
			return nil
		}
	}
	if !f.wait {
		if sum.Run.Generation > 0 {
			e.sayf("not waiting; 'baton status --run %s' follows it\n", sum.Run)
		} else {
			e.sayf("not waiting; 'baton status --job %s' follows it\n", j.Name)
		}
		return nil
	}
	return waitAndReport(ctx, e, r, nominal, f.timeout)
}

// waitAndReport waits for the tick's run to settle and prints its items.
func waitAndReport(ctx context.Context, e *env, r *replayer, nominal time.Time, timeout time.Duration) error {
	run, items, err := waitSettled(ctx, r, nominal, timeout)
	if err != nil && len(items) == 0 {
		return err
	}
	fmt.Fprintln(e.text())
	e.reportItems(items, run.OpenedAt)
	fmt.Fprintln(e.text())
	e.reportRun(run)
	if err != nil {
		e.set("error", err.Error())
		fmt.Fprintf(e.stderr, "%s replay: %v\n", e.prog, err)
		return errFailed
	}
	if run.State != ledger.RunComplete {
		return errFailed
	}
	return nil
}

// waitSettled waits until the tick's run is finished, or until no item
// has become terminal for timeout.
func waitSettled(ctx context.Context, r *replayer, nominal time.Time, timeout time.Duration) (ledger.Run, []ledger.Item, error) {
	w := &settleWatch{r: r, stall: timeout}
	w.add(nominal)
	if err := w.wait(ctx, nil); err != nil {
		run, items := w.last(nominal)
		return run, items, err
	}
	run, items := w.last(nominal)
	return run, items, nil
}

// nominalAt is the schedule's latest tick at or before t; given is how
// the caller's input named t, for the error when there is none.
func nominalAt(j baton.Job, t time.Time, given string) (time.Time, error) {
	s, err := scheduleOf(j)
	if err != nil {
		return time.Time{}, err
	}
	n := s.Prev(t)
	if n.IsZero() {
		return time.Time{}, usagef("job %s's schedule %s has no tick at or before %s", j.Name, j.Schedule, given)
	}
	return n, nil
}

const replayItemSynopsis = `replay item --run R --asset A [--force] [flags]

Sends the message of item A of run R again, as the coordinator's fan-out
(or, for a derived item, the fan-in) would: the consumer claims it with its
idempotency key, so the item runs only if it is not terminal. A derived
item that never started, some of whose inputs have not ended (and none
ended without success), is refused (exit status 2), naming them: fan-in
enqueues it once they have succeeded. One whose input ended DEAD or
CANCELLED is enqueued: the consumer cancels it, naming that input.

  no record, FAILED, RUNNING past its lease (stuck)   enqueued; it runs
  RUNNING under a live claim   refused (its worker may still finish);
                               --force enqueues anyway (retried after it)
  SUCCEEDED, DEAD, CANCELLED   nothing to do (exit 0) without --force.
                               --force opens the tick's next generation:
                               every other item's outcome is carried over
                               unchanged, A runs again, and so do the
                               derived items that take A as input.

R must be the tick's current generation ('baton status' lists runs).
Exit status: 0 done (or nothing to do), 1 refused or the item did not end
SUCCEEDED, 2 bad usage or input.`

func defineReplayItem(e *env, fs *pflag.FlagSet) runFunc {
	var f replayFlags
	var runFlag, asset string
	var force bool
	f.register(e, fs)
	fs.StringVar(&runFlag, "run", "", "the run (e.g. fx@2026-11-21T12:01:00Z#1)")
	fs.StringVar(&asset, "asset", "", "the asset or derived item")
	fs.BoolVar(&force, "force", false, "see above: enqueue a held item, or re-run a terminal one in a new generation")
	return func(ctx context.Context, _ []string) error { return replayItem(ctx, e, fs, &f, runFlag, asset, force) }
}

func replayItem(ctx context.Context, e *env, fs *pflag.FlagSet, f *replayFlags, runFlag, asset string, force bool) error {
	if err := f.check(); err != nil {
		return err
	}
	id, j, err := parseRun(e.catalog, runFlag)
	if err != nil {
		return err
	}
	if given(fs, "job") && f.common.job != id.Job {
		return usagef("--job %s and --run %s name different jobs", f.common.job, runFlag)
	}
	if err := checkAsset(j, asset); err != nil {
		return err
	}
	r, err := f.start(ctx, e, j.Name, f.wait)
	if err != nil {
		return err
	}
	defer r.close()
	op, err := ops.New(r.b, e.catalog, &ops.Options{Owner: "replay:" + operatorOwner(), Engine: r.eng})
	if err != nil {
		return err
	}
	rep, err := op.ReplayItem(ctx, id, asset, force)
	if errors.Is(err, ops.ErrUnknownRun) || errors.Is(err, ops.ErrSuperseded) {
		return runRefusal(err, "replay the item of that run")
	}
	if err != nil {
		return itemReplayRefusal(err)
	}
	if !printItemReplay(e, ledger.ItemKey{Run: id, Asset: asset}, rep) || !f.wait {
		return nil
	}
	return waitItemReplay(ctx, e, r, j, rep.Key, f.timeout)
}

// itemReplayRefusal explains why ReplayItem refused, and what to do.
func itemReplayRefusal(err error) error {
	var held *exec.ItemHeldError
	var lheld *lease.HeldError
	switch {
	case errors.As(err, &held):
		return fmt.Errorf("refused: %v; its worker may still finish it (if it died, the item is taken over once the lease ends). --force enqueues it anyway", err)
	case errors.As(err, &lheld):
		return fmt.Errorf("refused: the job's lease is held by %q (fence %d) until %s; try again once that coordinator is done", lheld.Holder.Owner, lheld.Holder.Fence, rfc(lheld.Holder.ExpiresAt))
	case errors.Is(err, exec.ErrRunInFlight):
		return fmt.Errorf("refused: %v", err)
	case errors.Is(err, exec.ErrInputsPending):
		return usagef("refused: %v", err)
	}
	return err
}

// printItemReplay says what ReplayItem did to key. It returns false when
// there is nothing to wait for (the item was already terminal).
func printItemReplay(e *env, key ledger.ItemKey, rep exec.ItemReplay) bool {
	was := pending
	if rep.Before.State != "" {
		was = describeItem(rep.Before)
	}
	switch rep.Outcome {
	case exec.ItemAlreadyTerminal:
		e.sayf("%s is already %s (attempt %d); nothing to do (--force re-runs it in the tick's next generation)\n",
			rep.Key, rep.Before.State, rep.Before.Attempt)
		return false
	case exec.ItemEnqueued:
		e.sayf("%s was %s; enqueued it again (fence %d)\n", rep.Key, was, rep.Fence)
	case exec.ItemNewGeneration:
		e.sayf("%s was %s; opened %s (fence %d): carried over %d item(s) unchanged, re-running %v\n",
			key, was, rep.Key.Run, rep.Fence, len(rep.Carried), rep.Rerun)
	}
	return true
}

// waitItemReplay waits for the replayed item key, then for the derived
// items downstream of it that can proceed (all their inputs terminal:
// the consumer enqueues or cancels them), and prints them. It fails
// (errFailed) unless the item ended SUCCEEDED.
func waitItemReplay(ctx context.Context, e *env, r *replayer, j baton.Job, key ledger.ItemKey, timeout time.Duration) error {
	asset := key.Asset
	w := &settleWatch{r: r, stall: timeout}
	w.add(key.Run.Nominal)
	keys := []ledger.ItemKey{key}
	for _, d := range jobspec.Downstream(j, asset) {
		keys = append(keys, ledger.ItemKey{Run: key.Run, Asset: d.Name})
	}
	werr := w.waitRun(ctx, key.Run.Nominal, func(items map[string]ledger.Item) bool {
		return itemReplayDone(j, asset, items)
	})
	ok := true
	for i, k := range keys {
		it, err := r.b.Ledger.GetItem(ctx, k)
		if errors.Is(err, ledger.ErrNotFound) {
			e.sayf("%s: %s\n", k, pending)
			ok = ok && i > 0 // a derived item may wait on other inputs
			continue
		}
		if err != nil {
			return errors.Join(werr, err)
		}
		line := fmt.Sprintf("%s: %s, attempt %d", k, it.State, it.Attempt)
		if it.Error != "" {
			line += fmt.Sprintf(" (%s)", it.Error)
		}
		e.sayf("%s\n", line)
		if i == 0 {
			ok = it.State == ledger.ItemSucceeded
		}
	}
	if werr != nil {
		return werr
	}
	if !ok {
		return errFailed
	}
	return nil
}

// itemReplayDone reports whether a replay of asset is over in items: the
// asset is terminal, and so is each derived item downstream of it, unless
// that item waits on an input outside the replay (one that is neither the
// asset nor downstream of it and is not terminal: not this replay's
// business).
func itemReplayDone(j baton.Job, asset string, items map[string]ledger.Item) bool {
	if !items[asset].State.Terminal() {
		return false
	}
	down := jobspec.Downstream(j, asset)
	wave, blocked := map[string]bool{asset: true}, map[string]bool{}
	for _, d := range down {
		wave[d.Name] = true
	}
	for _, d := range down {
		if items[d.Name].State.Terminal() {
			continue
		}
		outside := false
		for _, in := range d.Inputs {
			if blocked[in] || !wave[in] && !items[in].State.Terminal() {
				outside = true // d waits on another input; not this replay's business
			}
		}
		if !outside {
			return false
		}
		blocked[d.Name] = true // and so do the items downstream of d
	}
	return true
}
