// Package batontest helps test processors without a backend: an
// in-memory effect store that fences writes as every engine does, and
// tasks bound to it, as the runtime hands them to a processor.
//
//	effects := batontest.NewEffects()
//	task := effects.NewTask(batontest.TaskParams{Job: "quotes", Asset: "AAPL", Nominal: tick})
//	result, err := myProcessor.Process(ctx, task)
//	stored, err := effects.Get(ctx, "quotes", "quote/AAPL/…")
package batontest

import (
	"context"
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
	}
}

// Get returns job's effect stored under key, or an error matching
// baton.ErrNotFound.
func (e *Effects) Get(ctx context.Context, job, key string) (baton.Effect, error) {
	return effect.Bind(e.store, job, 0, 0, e.clock).Get(ctx, key)
}
