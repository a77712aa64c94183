package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/batonhq/baton/internal/ops"
	"github.com/batonhq/baton/internal/runstatus"
)

const pauseSynopsis = `pause --job J [--reason TEXT] [flags]

Pauses job J: from now on its coordinator skips the job's scheduled ticks
instead of running them, and records each one (status shows the pause, the
count of ticks skipped and each skipped tick as "skipped (paused)"). Runs
already in flight finish; nothing else changes. A forced replay
('baton replay tick --force') still runs a tick of a paused job.

The flag is stored with the job's lease, in every process's view at once
(on AWS: the PAUSE#<job> record of the table). Pausing a paused job
changes nothing. 'baton resume' ends the pause; the ticks skipped are not
caught up (replay them with 'baton replay range' if they are needed).

A pause sets off the job's ticks-stopped alarm on AWS after its window
(no run opens): the alarm says that the job does not run, which is true.`

const resumeSynopsis = `resume --job J [--reason TEXT] [flags]

Ends job J's pause: its next scheduled tick runs. The ticks skipped while it
was paused stay skipped (status lists them as "skipped (paused)", and the
job's catch-up policy does not run them). Resuming a job that is not paused
changes nothing.`

func pauseCommands() []command {
	return []command{
		{synopsis: pauseSynopsis, summary: "pause a job: its ticks are skipped and recorded until 'baton resume'", backend: true,
			example:    "  baton pause --job fx --reason 'provider outage, INC-1234'\n  baton pause --job fx --backend aws --json",
			defineFunc: func(e *env, fs *pflag.FlagSet) runFunc { return definePause(e, fs, true) }},
		{synopsis: resumeSynopsis, summary: "resume a paused job: its next tick runs", backend: true,
			example:    "  baton resume --job fx\n  baton resume --job fx --json",
			defineFunc: func(e *env, fs *pflag.FlagSet) runFunc { return definePause(e, fs, false) }},
	}
}

func definePause(e *env, fs *pflag.FlagSet, paused bool) runFunc {
	var reason string
	fs.StringVar(&reason, "reason", "", "why (shown by status; default names the operator)")
	return func(ctx context.Context, _ []string) error { return setPause(ctx, e, paused, reason) }
}

func setPause(ctx context.Context, e *env, paused bool, reason string) error {
	j, err := lookupJob(e.catalog, e.backend.job)
	if err != nil {
		return err
	}
	b, op, err := openOperator(ctx, &e.backend, e.catalog)
	if err != nil {
		return err
	}
	defer b.Close()
	set := op.Resume
	if paused {
		set = op.Pause
	}
	res, err := set(ctx, j.Name, reason)
	if errors.Is(err, ops.ErrCannotPause) {
		return fmt.Errorf("refused: %w", err)
	}
	if err != nil {
		return err
	}
	after := res.After
	e.set("job", j.Name)
	e.set("changed", res.Changed)
	e.set("pause", runstatus.NewPause(after))
	switch {
	case !res.Changed && paused:
		e.sayf("job %s is already paused (since %s, by %s); nothing changed\n", j.Name, rfc(after.Since), after.By)
	case !res.Changed:
		e.sayf("job %s is not paused; nothing changed\n", j.Name)
	case paused:
		e.sayf("paused job %s at %s: its ticks are skipped and recorded until 'baton resume --job %s'\n", j.Name, rfc(after.Since), j.Name)
	default:
		e.sayf("resumed job %s at %s: its next tick runs; %d tick(s) skipped while paused stay skipped\n", j.Name, rfc(after.Until), after.Skipped)
	}
	return nil
}
