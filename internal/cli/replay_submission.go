package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/ledger"
)

const replaySubmissionSynopsis = `replay submission --job J --key K [flags]

Runs the submission K of job J again, as the run's next generation, with
the items and payloads stored with its latest run (a chained run keeps its
parent). Its latest run must be finished (complete or partial): one still
running is refused. The dedupe key then finds the new generation. Two
replays of the key at once replay it once: the second waits for the first
(a few seconds at most) and reports its run ("another caller replayed …
meanwhile", existing true with --json).

With --wait (the default) it waits for the new run to finish and reports
it. --json prints run (the new run), previous (the replayed one), enqueued,
existing and, once waited for, run_state, succeeded, dead and cancelled.

Exit status: 0 when the new run finishes complete (or with --wait=false
once it is fanned out), 1 when it ends partial, does not finish within
--timeout or is refused, 2 for bad usage or input.`

func defineReplaySubmission(e *env, fs *pflag.FlagSet) runFunc {
	var f replayFlags
	var key string
	f.register(e, fs)
	fs.StringVar(&key, "key", "", "the submission's dedupe key ('baton status' lists a job's submissions)")
	return func(ctx context.Context, _ []string) error { return replaySubmission(ctx, e, &f, key) }
}

func replaySubmission(ctx context.Context, e *env, f *replayFlags, key string) error {
	if err := f.check(); err != nil {
		return err
	}
	j, err := lookupJob(e.catalog, f.common.job)
	if err != nil {
		return err
	}
	if key == "" {
		return usagef("--key is required (the submission's dedupe key; 'baton status --job %s' lists them)", j.Name)
	}
	r, err := f.start(ctx, e, j.Name, false) // consumers once the replay is accepted
	if err != nil {
		return err
	}
	defer r.close()
	sum, err := r.eng.Coordinator.ReplaySubmission(ctx, j.Name, key, time.Time{})
	switch {
	case errors.Is(err, coordinator.ErrSubmission):
		return usagef("%v", err)
	case errors.Is(err, ledger.ErrNotFound):
		return usagef("job %s has no submission %q (within its retention): %v", j.Name, key, err)
	case errors.Is(err, coordinator.ErrReplayInFlight):
		return fmt.Errorf("refused: %v; wait for it ('baton status --run %s') or cancel it", err, sum.Run)
	case err != nil:
		return err
	}
	if sum.Outcome == coordinator.OutcomeSkipped && !sum.Deduped {
		return fmt.Errorf("refused: submission %s+%s is being opened by another caller; run the command again", j.Name, key)
	}
	prev := sum.Run
	prev.Generation--
	e.set("run", sum.Run.String())
	e.set("previous", prev.String())
	e.set("enqueued", sum.Enqueued)
	e.set("existing", sum.Deduped)
	if sum.Deduped {
		e.sayf("another caller replayed %s as %s meanwhile: nothing more opened, %d messages enqueued\n", prev, sum.Run, sum.Enqueued)
	} else {
		e.sayf("replayed %s as %s, %d messages enqueued\n", prev, sum.Run, sum.Enqueued)
	}
	if f.wait {
		r.consume(ctx)
	}
	if !f.wait {
		e.sayf("not waiting; 'baton status --run %s' follows it\n", sum.Run)
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	run, err := waitRun(wctx, r.b.Ledger, sum.Run)
	e.set("run_state", string(run.State))
	e.set("succeeded", run.Succeeded)
	e.set("dead", run.Dead)
	e.set("cancelled", run.Cancelled)
	if err != nil {
		e.sayf("run %s is %s after %s: not finished\n", sum.Run, run.State, f.timeout)
		return errFailed
	}
	e.sayf("run %s is %s: %d succeeded, %d dead, %d cancelled\n", sum.Run, run.State, run.Succeeded, run.Dead, run.Cancelled)
	if run.State != ledger.RunComplete {
		return errFailed
	}
	return nil
}
