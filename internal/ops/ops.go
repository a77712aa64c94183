// Package ops is the operator's actions on a backend, with the guards the
// CLI has always applied: cancel a run or one of its items, pause and
// resume a job, list, redrive and purge the dead-letter queue, release a
// job's coordinator lease, replay an item or a tick. The CLI, the
// dashboard and batonclient call it and render its results; it prints
// nothing.
//
// # Results and errors
//
// Every action returns a result struct saying what it found and what it
// changed, and an error that callers test with errors.Is or errors.As:
// a refusal is a typed error carrying what refused it (a live lease's
// record, the item that is already terminal, the run that superseded the
// one named), never only text. An action interrupted half-way returns the
// result so far with its error.
//
// # Time
//
// Options.NowFunc is the clock of every decision that depends on time
// (is a lease live, is a claim stuck, how old is a dead letter).
package ops

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
)

// Pending is the state shown for an item that has no record yet.
const Pending = "PENDING"

// Options tune an Operator.
type Options struct {
	// Owner names the operator: in default reasons ("cancelled by …"), in
	// the pause record's By, in the owner of a lease takeover
	// ("operator:…"). "" means Engine's owner, else "operator".
	Owner string
	// NowFunc is the clock; nil means Engine's, else time.Now.
	NowFunc func() time.Time
	// Engine, optional, is the runtime whose coordinator settles a
	// cancelled run and replays items and ticks (its job queues route
	// their messages). nil: Cancel and the replays build one on the
	// backend (exec.New) the first time they need it; the other actions
	// never need one.
	Engine *exec.Runtime
}

// Operator performs the actions on one backend for one catalog. Its
// methods may be called concurrently.
type Operator struct {
	b       backend.Backend
	catalog *baton.Catalog
	o       Options

	mu  sync.Mutex
	eng *exec.Runtime
}

// New returns an Operator on b for catalog c.
func New(b backend.Backend, c *baton.Catalog, o *Options) (*Operator, error) {
	if c == nil {
		return nil, errors.New("ops: no job catalog")
	}
	if b.Ledger == nil || b.Leases == nil {
		return nil, errors.New("ops: backend without a ledger or leases")
	}
	op := &Operator{b: b, catalog: c}
	if o != nil {
		op.o = *o
	}
	if e := op.o.Engine; e != nil {
		if op.o.Owner == "" {
			op.o.Owner = e.Owner()
		}
		if op.o.NowFunc == nil {
			op.o.NowFunc = e.Now
		}
	}
	if op.o.Owner == "" {
		op.o.Owner = "operator"
	}
	op.eng = op.o.Engine
	return op, nil
}

func (o *Operator) now() time.Time {
	if o.o.NowFunc != nil {
		return o.o.NowFunc()
	}
	return time.Now()
}

// engine returns the runtime, building it on first use.
func (o *Operator) engine() (*exec.Runtime, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.eng != nil {
		return o.eng, nil
	}
	eng, err := exec.New(o.b, exec.Options{Catalog: o.catalog, Owner: o.o.Owner, NowFunc: o.o.NowFunc})
	if err != nil {
		return nil, err
	}
	o.eng = eng
	return eng, nil
}

// Errors of the actions that name a run.
var (
	// ErrUnknownRun: the run's tick (or submission) has no run, or the
	// generation named is beyond its current one. The error is an
	// *UnknownRunError.
	ErrUnknownRun = errors.New("unknown run")
	// ErrSuperseded: the run named is an older generation of its tick;
	// act on the current one. The error is a *SupersededError.
	ErrSuperseded = errors.New("superseded")
	// ErrUnknownItem: the job (or the run's stored list) has no item of
	// that name, or the job's items are computed when its run opens and
	// cannot be named one by one.
	ErrUnknownItem = errors.New("unknown item")
)

// UnknownRunError reports a run that does not exist.
type UnknownRunError struct {
	ID ledger.RunID
	// Latest is the tick's latest generation when there is one (ID's
	// generation is beyond it); zero when the tick has no run.
	Latest ledger.RunID
}

func (e *UnknownRunError) Error() string {
	if e.Latest.Job == "" {
		return fmt.Sprintf("unknown run %s: tick %s has no run", e.ID, jobspec.TickKey(e.ID))
	}
	return fmt.Sprintf("unknown run %s: the tick's latest generation is %s", e.ID, e.Latest)
}

// Is makes errors.Is(err, ErrUnknownRun) true.
func (e *UnknownRunError) Is(target error) bool { return target == ErrUnknownRun }

// SupersededError reports a run that is not its tick's current
// generation.
type SupersededError struct {
	ID      ledger.RunID
	Current ledger.Run
}

func (e *SupersededError) Error() string {
	return fmt.Sprintf("run %s is superseded by %s", e.ID, e.Current.ID)
}

// Is makes errors.Is(err, ErrSuperseded) true.
func (e *SupersededError) Is(target error) bool { return target == ErrSuperseded }

// currentRun returns the record of run id when id is its tick's current
// generation, else an *UnknownRunError or a *SupersededError.
func (o *Operator) currentRun(ctx context.Context, id ledger.RunID) (ledger.Run, error) {
	run, err := ledger.GetRunOf(ctx, o.b.Ledger, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return ledger.Run{}, &UnknownRunError{ID: id}
	}
	if err != nil {
		return ledger.Run{}, fmt.Errorf("look up %s: %w", id, err)
	}
	switch {
	case id.Generation > run.ID.Generation:
		return run, &UnknownRunError{ID: id, Latest: run.ID}
	case id.Generation < run.ID.Generation:
		return run, &SupersededError{ID: id, Current: run}
	}
	return run, nil
}

// job returns the catalog's job called name.
func (o *Operator) job(name string) (baton.Job, error) {
	return o.catalog.Lookup(name)
}

// itemError is an error matching ErrUnknownItem, with its own text.
type itemError struct{ msg string }

func (e itemError) Error() string        { return e.msg }
func (e itemError) Is(target error) bool { return target == ErrUnknownItem }

func unknownItem(format string, args ...any) error {
	return itemError{fmt.Sprintf(format, args...)}
}
