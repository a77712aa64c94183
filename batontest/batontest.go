// Package batontest helps test processors without a backend: an
// in-memory effect store that fences writes as every engine does, tasks
// bound to it, as the runtime hands them to a processor, and a claim
// whose heartbeats a test counts and cancels.
//
//	effects := batontest.NewEffects()
//	task := effects.NewTask(batontest.TaskParams{Job: "quotes", Asset: "AAPL", Nominal: tick})
//	result, err := myProcessor.Process(ctx, task)
//	stored, err := effects.Get(ctx, "quotes", "quote/AAPL/…")
package batontest

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/effect/effecttest"
)

// Effects is an in-memory store of every job's effects, fenced like the
// engines' stores: a write is refused with baton.ErrStale once a later
// (generation, attempt) wrote the key. Safe for concurrent use.
type Effects struct {
	store *effecttest.MemStore
	mu    sync.Mutex
	now   func() time.Time
}

// NewEffects returns an empty store whose writes are stamped with
// time.Now.
func NewEffects() *Effects {
	return &Effects{store: effecttest.NewMemStore(), now: time.Now}
}

// SetNow sets the clock that stamps Effect.WrittenAt.
func (e *Effects) SetNow(now func() time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.now = now
}

func (e *Effects) clock() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now()
}

// TaskParams describe a task. Zero Generation and Attempt are 1.
type TaskParams struct {
	Job        string
	Asset      string
	Nominal    time.Time
	Generation int
	Attempt    int
	Fence      int64
	Inputs     map[string][]byte // a derived item's inputs' results
	// Claim is the task's claim; nil: the task has none, and its
	// Heartbeat does nothing (see NewClaim for one a test controls).
	Claim baton.Claim
	// Payload is the item's payload (a run-time list's); Parent the run
	// that started the task's run through a Chain; Runs what the task
	// reads runs' results with (see Runs). All optional.
	Payload []byte
	Parent  baton.RunID
	Runs    baton.RunReader
}

// Runs is a baton.RunReader over results a test sets, by run: for a
// processor that summarises its parent run (Task.ParentResults). Results
// yields a run's results in the order given; a run it does not hold
// yields an error matching baton.ErrNoRun.
type Runs map[baton.RunID][]baton.ItemResult

// Results yields run's results.
func (r Runs) Results(_ context.Context, run baton.RunID) iter.Seq2[baton.ItemResult, error] {
	return func(yield func(baton.ItemResult, error) bool) {
		results, ok := r[run]
		if !ok {
			yield(baton.ItemResult{}, fmt.Errorf("results of %s: %w", run, baton.ErrNoRun))
			return
		}
		for _, res := range results {
			if !yield(res, nil) {
				return
			}
		}
	}
}

// NewTask returns the task p describes, its Effects bound to e with the
// task's generation and attempt.
func (e *Effects) NewTask(p TaskParams) baton.Task {
	if p.Generation == 0 {
		p.Generation = 1
	}
	if p.Attempt == 0 {
		p.Attempt = 1
	}
	nominal := p.Nominal.UTC()
	return baton.Task{
		Key:     baton.ItemKey{Run: baton.RunID{Job: p.Job, Nominal: nominal, Generation: p.Generation}, Asset: p.Asset},
		Asset:   p.Asset,
		Nominal: nominal,
		Attempt: p.Attempt,
		Fence:   p.Fence,
		Inputs:  p.Inputs,
		Effects: effect.Bind(e.store, p.Job, p.Generation, p.Attempt, e.clock),
		Claim:   p.Claim,
		Payload: p.Payload,
		Parent:  p.Parent,
		Runs:    p.Runs,
	}
}

// Claim is a baton.Claim a test controls: it counts heartbeats, and once
// Cancel or Lose is called its Heartbeat returns the error the runtime's
// would (matching baton.ErrCancelled or baton.ErrClaimLost), so that a
// processor's way of stopping can be tested. Safe for concurrent use. It
// does not end the processor's context: cancel the context you pass to
// Process to test that path.
type Claim struct {
	mu         sync.Mutex
	lease      time.Duration
	now        func() time.Time
	until      time.Time
	heartbeats int
	err        error
}

// NewClaim returns a live claim renewed by lease from now() at each
// heartbeat; nil now: time.Now.
func NewClaim(lease time.Duration, now func() time.Time) *Claim {
	if now == nil {
		now = time.Now
	}
	return &Claim{lease: lease, now: now, until: now().Add(lease)}
}

// Heartbeat implements baton.Claim.
func (c *Claim) Heartbeat(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	c.heartbeats++
	c.until = c.now().Add(c.lease)
	return nil
}

// Until implements baton.Claim.
func (c *Claim) Until() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.until
}

// Heartbeats returns how many heartbeats renewed the claim.
func (c *Claim) Heartbeats() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.heartbeats
}

// Cancel makes every later Heartbeat fail as for an item cancelled with
// reason.
func (c *Claim) Cancel(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = fmt.Errorf("%w (%s)", baton.ErrCancelled, reason)
}

// Lose makes every later Heartbeat fail as for a claim another attempt
// took over.
func (c *Claim) Lose() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = fmt.Errorf("%w: taken over by another attempt", baton.ErrClaimLost)
}

// Get returns job's effect stored under key, or an error matching
// baton.ErrNotFound.
func (e *Effects) Get(ctx context.Context, job, key string) (baton.Effect, error) {
	return effect.Bind(e.store, job, 0, 0, e.clock).Get(ctx, key)
}
