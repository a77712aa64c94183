package baton

import (
	"context"
	"errors"
	"time"
)

// Task is what a Processor gets for one item; in a Task built by hand a nil
// Effects, Limiter, Claim or Runs makes its methods do nothing.
type Task struct {
	Key     ItemKey           // the item's idempotency key (run id + asset)
	Asset   string            // the item's name
	Nominal time.Time         // the tick's nominal time (UTC)
	Attempt int               // the claim's attempt (1, 2, …)
	Fence   int64             // the fence of the coordinator lease that enqueued the item
	Inputs  map[string][]byte // a derived item's inputs' results, by name
	Parent  RunID             // the run whose finish started this one through a Chain, if any
	Payload []byte            // the item's payload (a run-time list's Item.Payload); never logged
	Effects Effects           // the job's fenced effect store, bound to this task
	Limiter Limiter           // takes starts of the job's rate limits (see Wait)
	Claim   Claim             // the task's hold on its item (see Heartbeat)
	Runs    RunReader         // reads runs' results from the task's engine (see ParentResults)
}

// Heartbeat renews the task's claim on its item (see Claim.Heartbeat).
func (t Task) Heartbeat(ctx context.Context) error {
	if t.Claim == nil {
		return nil
	}
	return t.Claim.Heartbeat(ctx)
}

// Processor is the code of a job. A nil error commits the result, once per
// item; an error wrapped with Permanent ends the item DEAD, others are
// retried up to MaxAttempts. Process must honour ctx (context.Cause says
// why it ended) and may run more than once for an item.
type Processor interface {
	Process(ctx context.Context, t Task) (result []byte, err error)
}

// ProcessorFunc adapts a function to Processor.
type ProcessorFunc func(ctx context.Context, t Task) ([]byte, error)

// Process calls f.
func (f ProcessorFunc) Process(ctx context.Context, t Task) ([]byte, error) { return f(ctx, t) }

type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent marks err as not worth retrying: the item ends DEAD.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// Effects is a job's store for side effects, fenced for one task: a Put is
// refused with ErrStale once a later attempt or generation wrote the key.
type Effects interface {
	Put(ctx context.Context, key string, value []byte) error // writes value under key, or ErrStale
	Get(ctx context.Context, key string) (Effect, error)     // the value under key, or ErrNotFound
}

// Effect is one stored value of an Effects store.
type Effect struct {
	Key        string
	Value      []byte
	Generation int       // of the run whose task wrote it
	Attempt    int       // of the claim that wrote it
	WrittenAt  time.Time // the writer's clock
}

// Errors of Effects.
var (
	ErrStale    = errors.New("stale effect write: a later generation or attempt wrote the key")
	ErrNotFound = errors.New("not found") // nothing is stored under the key
)
