package baton

import (
	"context"
	"errors"
	"iter"
	"time"
)

// ItemResult is one item of a run as the ledger holds it.
type ItemResult struct {
	Item       string
	State      string // RUNNING, SUCCEEDED, FAILED, DEAD or CANCELLED; "" when it never started
	Attempts   int
	Result     []byte // the processor's result, when SUCCEEDED
	Error      string // the last failure or cancel reason
	FinishedAt time.Time
	// NextAttempt of a waiting item, and the limit and key it waits on ("" for a retry delay).
	NextAttempt        time.Time
	WaitLimit, WaitKey string
}

// RunReader reads the results of the catalog's runs.
type RunReader interface {
	// Results yields run's items in name order, or an error (ErrNoRun).
	Results(ctx context.Context, run RunID) iter.Seq2[ItemResult, error]
}

// ErrNoRun matches RunReader.Results' error for a run that does not exist.
var ErrNoRun = errors.New("no such run")

// ErrNoParent matches Task.ParentResults' error without a Task.Parent.
var ErrNoParent = errors.New("the task's run has no parent run")

// ParentResults yields the results of the run Task.Parent.
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
