package ui

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/ops"
)

// Actor performs the dashboard's actions with the operator's calls
// (package ops), which keep the guards of the CLI's commands, and says
// what each did in the dashboard's words. It runs no command and shows no
// command's output.
type Actor struct {
	Catalog *baton.Catalog
	// OpenFunc opens the backend the actions write to (the pages read a
	// read-only one); each action opens it and closes it when done.
	OpenFunc func(ctx context.Context) (backend.Backend, error)
	// Owner names the operator: in cancel reasons and lease takeovers.
	Owner string
	// Consumers is how many batches a replay consumes in this process
	// while it waits (0: none, the deployed consumers work).
	Consumers int
	// Timeout bounds a replay's wait for its run (or item) to settle.
	Timeout time.Duration
	Logger  *slog.Logger
}

var _ interface {
	Do(context.Context, Action) Outcome
} = (*Actor)(nil)

// Exit statuses of an Outcome, as the CLI's.
const (
	statusOK       = 0
	statusRefused  = 1
	statusBadInput = 2
)

// Do performs a and reports what it did. A confirmed action runs to its
// end even if the browser goes away (up to Timeout and a minute).
func (x *Actor) Do(ctx context.Context, a Action) Outcome {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), x.Timeout+time.Minute)
	defer cancel()
	b, err := x.OpenFunc(ctx)
	if err != nil {
		return Outcome{ExitStatus: statusRefused, Output: err.Error()}
	}
	defer b.Close()
	logger := x.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var eng *exec.Runtime
	if a.Kind == ReplayTick || a.Kind == ReplayItem || a.Kind == Cancel {
		eng, err = exec.New(b, exec.Options{Catalog: x.Catalog, Owner: x.Owner, Consumers: max(x.Consumers, 1), Logger: logger})
		if err != nil {
			return Outcome{ExitStatus: statusRefused, Output: err.Error()}
		}
	}
	op, err := ops.New(b, x.Catalog, &ops.Options{Owner: x.Owner, Engine: eng})
	if err != nil {
		return Outcome{ExitStatus: statusRefused, Output: err.Error()}
	}
	w := &outcomeWriter{}
	switch a.Kind {
	case Cancel:
		x.cancel(ctx, op, a, w)
	case Redrive:
		x.redrive(ctx, op, w)
	case ReleaseLease:
		x.releaseLease(ctx, op, a, w)
	case ReplayTick:
		x.replayTick(ctx, b, eng, op, a, w)
	case ReplayItem:
		x.replayItem(ctx, b, eng, op, a, w)
	default:
		w.fail(statusBadInput, fmt.Errorf("unknown action %q", a.Kind))
	}
	return Outcome{ExitStatus: w.status, Output: w.String()}
}

// outcomeWriter collects an action's lines and its status.
type outcomeWriter struct {
	strings.Builder
	status int
}

func (w *outcomeWriter) linef(format string, args ...any) {
	fmt.Fprintf(w, format+"\n", args...)
}

// fail records err as the action's end with status.
func (w *outcomeWriter) fail(status int, err error) {
	w.status = status
	w.linef("%v", err)
}

// refuse records err: bad input when it names a run or an item that is
// not there, else a refusal.
func (w *outcomeWriter) refuse(err error) {
	switch {
	case errors.Is(err, ops.ErrUnknownRun), errors.Is(err, ops.ErrSuperseded), errors.Is(err, ops.ErrUnknownItem),
		errors.Is(err, ops.ErrInputsPending):
		w.fail(statusBadInput, fmt.Errorf("refused: %w", err))
	default:
		w.fail(statusRefused, fmt.Errorf("refused: %w", err))
	}
}

func (x *Actor) cancel(ctx context.Context, op *ops.Operator, a Action, w *outcomeWriter) {
	res, err := op.Cancel(ctx, ops.CancelParams{Run: a.Run, Item: a.Asset, Reason: "cancelled from baton ui by " + x.Owner})
	for _, it := range res.Items {
		if !it.Changed {
			w.linef("%s: %s, unchanged (terminal)", it.Item, it.After.State)
			continue
		}
		w.linef("%s: %s → %s", it.Item, describe(it.Before), it.After.State)
	}
	if res.Run.ID.Job != "" {
		w.linef("%d cancelled, %d already terminal; run %s is %s", res.Cancelled, res.AlreadyTerminal, res.Run.ID, res.Run.State)
	}
	if err != nil {
		w.refuse(err)
	}
}

// describe is an item's state with who holds it.
func describe(it ledger.Item) string {
	switch it.State {
	case "":
		return ops.Pending
	case ledger.ItemRunning:
		return fmt.Sprintf("RUNNING (%s, attempt %d)", it.Owner, it.Attempt)
	case ledger.ItemFailed:
		return fmt.Sprintf("FAILED (attempt %d)", it.Attempt)
	}
	return string(it.State)
}

func (x *Actor) redrive(ctx context.Context, op *ops.Operator, w *outcomeWriter) {
	res, err := op.Redrive(ctx, 0)
	if res.Moved > 0 || err == nil {
		w.linef("moved %d message(s) from the dead-letter queue to the work queue; items already terminal are acknowledged without running", res.Moved)
	}
	if err != nil {
		w.fail(statusRefused, err)
		return
	}
	if res.Left.Known && res.Left.Messages > 0 {
		w.linef("%d message(s) left in the dead-letter queue (in flight)", res.Left.Messages)
	}
}

// releaseLease releases an expired lease only: the dashboard never
// forces a live one.
func (x *Actor) releaseLease(ctx context.Context, op *ops.Operator, a Action, w *outcomeWriter) {
	res, err := op.ReleaseLease(ctx, ops.ReleaseParams{Job: a.Job, Owner: a.Owner, Fence: a.Fence})
	var live *ops.LeaseLiveError
	switch {
	case errors.As(err, &live):
		w.fail(statusRefused, fmt.Errorf("refused: %q holds the lease of %s until %s and may be alive; an expired lease is taken over at once by the next trigger, so waiting is safe (the dashboard never releases a live lease)",
			live.Lease.Owner, live.Job, live.Lease.ExpiresAt.UTC().Format(time.RFC3339)))
		return
	case err != nil:
		w.refuse(err)
		return
	}
	l := res.Lease
	switch res.Outcome {
	case ops.LeaseAlreadyFree:
		w.linef("the lease of %s is already free (fence %d); nothing to do", a.Job, l.Fence)
	case ops.LeaseChangedHands:
		w.linef("the lease of %s changed hands after you looked, and %q no longer held it; took it over as fence %d and released it: it is free", a.Job, l.Owner, res.TakeoverFence)
	default:
		w.linef("released the expired lease of %s: %q (fence %d, expired %s) was taken over as fence %d and released; late writes conditioned on fence %d are refused; the lease is free",
			a.Job, l.Owner, l.Fence, l.ExpiresAt.UTC().Format(time.RFC3339), res.TakeoverFence, l.Fence)
	}
}

// consume runs eng's consumers while a replay waits, when the actor has
// any; the returned func stops them.
func (x *Actor) consume(ctx context.Context, eng *exec.Runtime) (stop func()) {
	if x.Consumers <= 0 {
		return func() {}
	}
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Consume(cctx) })
	return func() { cancel(); wg.Wait() }
}

func (x *Actor) replayTick(ctx context.Context, b backend.Backend, eng *exec.Runtime, op *ops.Operator, a Action, w *outcomeWriter) {
	defer x.consume(ctx, eng)()
	sum, err := op.ReplayTick(ctx, ops.TickReplayParams{Job: a.Job, Nominal: a.Tick, Force: a.Force, LeaseWait: 30 * time.Second})
	if err != nil {
		w.fail(statusRefused, err)
		return
	}
	switch {
	case sum.Outcome == coordinator.OutcomePaused:
		w.fail(statusRefused, fmt.Errorf("refused: job %s is paused; resume it, or replay the tick as a new generation", a.Job))
		return
	case sum.Outcome == coordinator.OutcomeSkipped && sum.Pending:
		err := errors.New("another coordinator holds the job's lease; try again")
		if h := sum.Holder; h != nil {
			err = &lease.HeldError{Holder: *h}
		}
		w.fail(statusRefused, fmt.Errorf("refused: %w", err))
		return
	case sum.Outcome == coordinator.OutcomeAlreadyFannedOut || sum.Outcome == coordinator.OutcomeSkipped:
		run, err := eng.Coordinator.Settle(ctx, a.Job, a.Tick)
		if err != nil {
			w.fail(statusRefused, err)
			return
		}
		if run.State.Finished() {
			w.linef("nothing to do: the tick already ran (run %s is %s); a new generation runs it again", run.ID, run.State)
			return
		}
		w.linef("the tick's run %s is %s: waiting for it", run.ID, run.State)
	default:
		w.linef("%s run %s: %d item message(s) sent", sum.Outcome, sum.Run, sum.Enqueued)
	}
	x.waitRun(ctx, b, eng, a.Job, a.Tick, w)
}

// waitRun waits up to Timeout for the tick's run to settle and lists its
// items; the outcome fails unless the run is complete.
func (x *Actor) waitRun(ctx context.Context, b backend.Backend, eng *exec.Runtime, job string, nominal time.Time, w *outcomeWriter) {
	wctx, cancel := context.WithTimeout(ctx, x.Timeout)
	defer cancel()
	run, items, err := eng.WaitSettled(wctx, job, nominal, 50*time.Millisecond)
	for _, it := range items {
		line := fmt.Sprintf("%s: %s, attempt %d", it.Key.Asset, it.State, it.Attempt)
		if it.Error != "" {
			line += " (" + it.Error + ")"
		}
		w.linef("%s", line)
	}
	if err != nil {
		w.fail(statusRefused, err)
		return
	}
	w.linef("run %s is %s", run.ID, run.State)
	if run.State != ledger.RunComplete {
		w.status = statusRefused
	}
}

func (x *Actor) replayItem(ctx context.Context, b backend.Backend, eng *exec.Runtime, op *ops.Operator, a Action, w *outcomeWriter) {
	rep, err := op.ReplayItem(ctx, a.Run, a.Asset, a.Force)
	var held *exec.ItemHeldError
	switch {
	case errors.As(err, &held):
		w.fail(statusRefused, fmt.Errorf("refused: %w; its worker may still finish it (if it died, the item is taken over once its lease ends)", err))
		return
	case err != nil:
		w.refuse(err)
		return
	}
	switch rep.Outcome {
	case exec.ItemAlreadyTerminal:
		w.linef("%s is already %s (attempt %d); nothing to do (force re-runs it in the tick's next generation)", rep.Key, rep.Before.State, rep.Before.Attempt)
		return
	case exec.ItemNewGeneration:
		w.linef("%s/%s was %s; opened %s (fence %d): carried over %d item(s) unchanged, re-running %v",
			a.Run, a.Asset, describe(rep.Before), rep.Key.Run, rep.Fence, len(rep.Carried), rep.Rerun)
		defer x.consume(ctx, eng)()
		x.waitRun(ctx, b, eng, rep.Key.Run.Job, rep.Key.Run.Nominal, w)
		return
	}
	w.linef("%s was %s; enqueued it again (fence %d)", rep.Key, describe(rep.Before), rep.Fence)
	defer x.consume(ctx, eng)()
	x.waitItem(ctx, b, rep.Key, w)
}

// waitItem waits up to Timeout for the item to be terminal; the outcome
// fails unless it SUCCEEDED.
func (x *Actor) waitItem(ctx context.Context, b backend.Backend, key ledger.ItemKey, w *outcomeWriter) {
	wctx, cancel := context.WithTimeout(ctx, x.Timeout)
	defer cancel()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		it, err := b.Ledger.GetItem(wctx, key)
		if err == nil && it.State.Terminal() {
			line := fmt.Sprintf("%s: %s, attempt %d", key, it.State, it.Attempt)
			if it.Error != "" {
				line += " (" + it.Error + ")"
			}
			w.linef("%s", line)
			if it.State != ledger.ItemSucceeded {
				w.status = statusRefused
			}
			return
		}
		if err != nil && !errors.Is(err, ledger.ErrNotFound) && wctx.Err() == nil {
			w.fail(statusRefused, err)
			return
		}
		select {
		case <-wctx.Done():
			w.fail(statusRefused, fmt.Errorf("%s did not end within %s: %w", key, x.Timeout, wctx.Err()))
			return
		case <-t.C:
		}
	}
}
