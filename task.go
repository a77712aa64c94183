package baton

import (
	"context"
	"errors"
	"time"
)

// Task is what a Processor gets for one item.
type Task struct {
	// Key is the item's idempotency key (run id + asset); Key.String() is
	// its text form, the same in the ledger, the queue and the logs.
	Key ItemKey
	// Asset is the item's name: an asset or a derived item of the job.
	Asset string
	// Nominal is the tick's nominal time (UTC).
	Nominal time.Time
	// Attempt is the current claim's attempt (1, 2, …). Writes conditioned
	// on (Key.Run.Generation, Attempt) fence out stale workers; Effects
	// does that for you.
	Attempt int
	// Fence is the fence of the coordinator lease that enqueued the item.
	Fence int64
	// Inputs holds, for a derived item, each input's result by asset.
	Inputs map[string][]byte
	// Parent is the id of the run whose finish started this task's run
	// through a Chain; the zero RunID otherwise.
	Parent RunID
	// Payload is the item's payload (Item.Payload of a run-time list),
	// nil when it has none. It is never logged.
	Payload []byte
	// Effects is the job's fenced effect store, bound to this task: a Put
	// is refused with ErrStale once a later generation or attempt of the
	// item has written the same key. Never nil when the runtime calls
	// the processor.
	Effects Effects
	// Limiter takes starts of the job's rate limits (see Task.Wait). Never
	// nil when the runtime calls the processor; nil in a Task built by
	// hand, where Wait does nothing.
	Limiter Limiter
	// Claim is the task's hold on its item, which a long processor renews
	// with Heartbeat. Never nil when the runtime calls the processor; nil
	// in a Task built by hand, where Heartbeat does nothing.
	Claim Claim
	// Runs reads the results of the catalog's runs from the engine the
	// task runs on (see Task.ParentResults). Never nil when the runtime
	// calls the processor; nil in a Task built by hand.
	Runs RunReader
}

// Heartbeat renews the task's claim on its item: see Claim.Heartbeat. With
// no Claim (a Task built by hand) it does nothing and returns nil.
func (t Task) Heartbeat(ctx context.Context) error {
	if t.Claim == nil {
		return nil
	}
	return t.Claim.Heartbeat(ctx)
}

// Processor is the code of one job. Process must honour ctx: it ends when
// the claim on the item ends (its lease runs out without a heartbeat, the
// invocation's deadline comes) or when the item is cancelled, and
// context.Cause(ctx) says which (ErrCancelled, ErrClaimLost, or an error
// matching context.DeadlineExceeded).
// A nil error commits result (at most once per item: a completion is
// accepted only from the current attempt). An error wrapped with
// Permanent sends the item straight to DEAD; any other error is retried
// until the job's MaxAttempts. Process may be called concurrently, and
// more than once for an item (a crash, an expired claim): make its side
// effects conditional on the task's fence, as Effects does.
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

// Permanent marks err as not worth retrying: the item goes straight to
// DEAD with err as its reason. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent reports whether err, or an error it wraps, was marked with
// Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// Effects is a job's store for the side effects of its processor, kept on
// the same backend as the ledger (the SQLite file, the DynamoDB table) and
// fenced for one task: every Put carries the task's (generation, attempt),
// and a Put is refused with ErrStale when the stored value under the key
// was written by a later generation or a later attempt. A stale worker
// (one whose claim expired and was taken over) therefore cannot overwrite
// the newer worker's value, and a forced replay's values replace the
// earlier generation's. Keys are scoped to the job; a key should belong
// to one item of a tick (include the asset and the tick in it).
type Effects interface {
	// Put writes value under key, fenced by the task's (generation,
	// attempt); a write by the same (generation, attempt) replaces the
	// value (a processor may retry its own write). It returns an error
	// matching ErrStale when a later write holds the key.
	Put(ctx context.Context, key string, value []byte) error
	// Get returns the value stored under key, or an error matching
	// ErrNotFound.
	Get(ctx context.Context, key string) (Effect, error)
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
	// ErrStale: a later generation or attempt wrote the key.
	ErrStale = errors.New("stale effect write: a later generation or attempt wrote the key")
	// ErrNotFound: nothing is stored under the key.
	ErrNotFound = errors.New("not found")
)
