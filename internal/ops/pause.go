package ops

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/internal/lease"
)

// ErrCannotPause matches the refusal of Pause and Resume on a backend
// whose lease store has no pause ability (lease.Pauser).
var ErrCannotPause = errors.New("cannot pause jobs")

// PauseResult says what Pause or Resume did.
type PauseResult struct {
	Job string
	// Before and After are the job's pause record before and after.
	Before, After lease.Pause
	// Changed is false when the job already was as asked (pausing a
	// paused job, resuming one that is not paused): nothing was written.
	Changed bool
}

// Pause pauses job: from now on its coordinator skips the job's scheduled
// ticks and records each one; runs in flight finish. Pausing a paused job
// changes nothing (Changed false). reason "" means "paused by <Owner>".
func (o *Operator) Pause(ctx context.Context, job, reason string) (PauseResult, error) {
	return o.setPause(ctx, job, true, reason)
}

// Resume ends job's pause: its next scheduled tick runs; the ticks
// skipped stay skipped. Resuming a job that is not paused changes nothing
// (Changed false). reason "" means "resumed by <Owner>".
func (o *Operator) Resume(ctx context.Context, job, reason string) (PauseResult, error) {
	return o.setPause(ctx, job, false, reason)
}

func (o *Operator) setPause(ctx context.Context, job string, paused bool, reason string) (PauseResult, error) {
	j, err := o.job(job)
	if err != nil {
		return PauseResult{}, err
	}
	res := PauseResult{Job: j.Name}
	pauser, ok := lease.PauserOf(o.b.Leases)
	if !ok {
		return res, fmt.Errorf("the %s backend %w (its lease store has no pause ability)", o.b.Name, ErrCannotPause)
	}
	if res.Before, err = pauser.PauseOf(ctx, j.Name); err != nil {
		return res, err
	}
	verb := map[bool]string{true: "paused", false: "resumed"}[paused]
	if reason == "" {
		reason = verb + " by " + o.o.Owner
	}
	res.After, err = pauser.SetPause(ctx, lease.SetPauseParams{Job: j.Name, Paused: paused, By: o.o.Owner, Reason: reason, Now: o.now()})
	if err != nil {
		return res, err
	}
	res.Changed = res.Before.Paused != paused
	return res, nil
}
