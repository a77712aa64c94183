package baton

import (
	"context"
	"errors"
	"iter"
	"time"
)

// ItemResult is one item of a run as the ledger holds it.
type ItemResult struct {
	Item     string
	State    string // RUNNING, SUCCEEDED, FAILED, DEAD or CANCELLED; "" when it never started
	Attempts int
	// Result is the processor's result (SUCCEEDED); Error the last
	// failure or cancel reason.
	Result     []byte
	Error      string
	FinishedAt time.Time
	// NextAttempt is, for an item waiting (FAILED, its message handed
	// back delayed), the earliest time of its next attempt; zero when
	// none was noted. WaitLimit and WaitKey name the rate limit and key
	// it waits on ("" for a retry delay after a failed attempt).
	NextAttempt        time.Time
	WaitLimit, WaitKey string
}

// RunReader reads the item results of runs of the task's catalog from the
// engine the task runs on: the same ledger, so a processor needs no
// client of its own (and links no other store) to summarise another run.
type RunReader interface {
	// Results yields run's items in name order, a page at a time (memory
	// flat in the run's size): for a run with a stored list (a
	// submission, a job with Items) every item of the list, started or
	// not; for a tick of constant assets, the items that started. It
	// stops at the first error, which it yields; a run that does not
	// exist yields an error matching ErrNoRun.
	Results(ctx context.Context, run RunID) iter.Seq2[ItemResult, error]
}

// ErrNoRun matches the error of RunReader.Results for a run that does not
// exist (or was removed after its job's retention).
var ErrNoRun = errors.New("no such run")

// ErrNoParent matches the error of Task.ParentResults for a task whose
// run was not started by a Chain.
var ErrNoParent = errors.New("the task's run has no parent run")

// ParentResults yields the results of the run whose finish started this
// task's run through a Chain (Task.Parent), as RunReader.Results does:
// the way to summarise a run-time list (Job.Items), whose job has no
// derived items, is a chained job whose processor reads them here.
func (t Task) ParentResults(ctx context.Context) iter.Seq2[ItemResult, error] {
	return func(yield func(ItemResult, error) bool) {
		switch {
		case t.Parent == (RunID{}):
			yield(ItemResult{}, ErrNoParent)
		case t.Runs == nil:
			yield(ItemResult{}, errors.New("task has no RunReader (a Task built by hand): set Task.Runs"))
		default:
			for r, err := range t.Runs.Results(ctx, t.Parent) {
				if !yield(r, err) || err != nil {
					return
				}
			}
		}
	}
}
