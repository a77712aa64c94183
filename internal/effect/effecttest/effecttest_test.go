package effecttest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/suitecheck"
)

func TestMemStore(t *testing.T) {
	Run(t, Harness{NewStoreFunc: func(*testing.T) effect.Store { return NewMemStore() }})
}

// The zero MemStore is ready to use; a shared one serves every case.
func TestMemStoreShared(t *testing.T) {
	var m MemStore
	Run(t, Harness{NewStoreFunc: func(*testing.T) effect.Store { return &m }})
}

// broken lists stores broken on purpose, each with the cases that must
// catch it.
var broken = map[string]struct {
	newStoreFunc func() effect.Store
	caughtBy     []string
}{
	"UnconditionalPut":     {func() effect.Store { return unconditionalPut{NewMemStore()} }, []string{"Fencing", "Sequence", "JobsScoped", "ConcurrentWriters"}},
	"AttemptFirst":         {func() effect.Store { return attemptFirst{NewMemStore()} }, []string{"Fencing", "ConcurrentWriters"}},
	"SamePairRefused":      {func() effect.Store { return samePairRefused{NewMemStore()} }, []string{"Fencing", "ConcurrentWriters"}},
	"GetThenPut":           {func() effect.Store { return getThenPut{NewMemStore()} }, []string{"ConcurrentWriters"}},
	"NoLimits":             {func() effect.Store { return noLimits{NewMemStore()} }, []string{"Invalid"}},
	"CaseInsensitiveKeys":  {func() effect.Store { return caseInsensitiveKeys{NewMemStore()} }, []string{"Keys"}},
	"KeepsCallersSlice":    {func() effect.Store { return keepsCallersSlice{NewMemStore()} }, []string{"PutGet"}},
	"StaleErrorSaysNoMore": {func() effect.Store { return terseStale{NewMemStore()} }, []string{"Fencing"}},
}

// TestSuiteFindsBrokenStores runs the suite against each broken store
// (package suitecheck) and requires the cases that should catch the
// breakage to fail. Together with TestMemStore, the verdict of the suite
// depends on the store.
func TestSuiteFindsBrokenStores(t *testing.T) {
	caughtBy := map[string][]string{}
	for name, b := range broken {
		caughtBy[name] = b.caughtBy
	}
	suitecheck.RequireCaught(t, "TestBrokenStore", caughtBy)
}

// TestBrokenStore runs the suite against the broken store named by
// suitecheck.Broken; only TestSuiteFindsBrokenStores runs it.
func TestBrokenStore(t *testing.T) {
	name := suitecheck.Broken(t)
	b, ok := broken[name]
	if !ok {
		t.Fatalf("no broken store %q", name)
	}
	Run(t, Harness{NewStoreFunc: func(*testing.T) effect.Store { return b.newStoreFunc() }})
}

// unconditionalPut writes whatever the stored pair.
type unconditionalPut struct{ *MemStore }

func (s unconditionalPut) Put(_ context.Context, r effect.Record) error {
	if err := effect.Validate(r); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.store(r)
	return nil
}

// attemptFirst compares the attempt before the generation.
type attemptFirst struct{ *MemStore }

func (s attemptFirst) Put(_ context.Context, r effect.Record) error {
	return s.conditional(r, func(stored effect.Record) bool {
		return r.Attempt > stored.Attempt || r.Attempt == stored.Attempt && r.Generation >= stored.Generation
	})
}

// samePairRefused applies only strictly higher pairs: a writer cannot
// repeat its own write.
type samePairRefused struct{ *MemStore }

func (s samePairRefused) Put(_ context.Context, r effect.Record) error {
	return s.conditional(r, func(stored effect.Record) bool {
		return r.Replaces(stored) && (r.Generation != stored.Generation || r.Attempt != stored.Attempt)
	})
}

// conditional is Put with replaces deciding over a stored record.
func (m *MemStore) conditional(r effect.Record, replaces func(stored effect.Record) bool) error {
	if err := effect.Validate(r); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if stored, ok := m.recs[address{r.Job, r.Key}]; ok && !replaces(stored) {
		return effect.StaleError(r, stored.Generation, stored.Attempt)
	}
	m.store(r)
	return nil
}

// getThenPut decides on a read and writes in a second step: each step is
// atomic and the decision right, but a higher writer's write may land
// between another's read and write, and be overwritten.
type getThenPut struct{ *MemStore }

func (s getThenPut) Put(ctx context.Context, r effect.Record) error {
	if err := effect.Validate(r); err != nil {
		return err
	}
	stored, err := s.Get(ctx, r.Job, r.Key)
	if err == nil && !r.Replaces(stored) {
		return effect.StaleError(r, stored.Generation, stored.Attempt)
	}
	time.Sleep(2 * time.Millisecond) // the window between the two steps
	s.mu.Lock()
	defer s.mu.Unlock()
	s.store(r)
	return nil
}

// noLimits checks nothing.
type noLimits struct{ *MemStore }

func (s noLimits) Put(_ context.Context, r effect.Record) error {
	return s.conditionalUnchecked(r)
}

func (s noLimits) Get(_ context.Context, job, key string) (effect.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[address{job, key}]
	if !ok {
		return effect.Record{}, effect.NotFoundError(job, key)
	}
	return r, nil
}

func (m *MemStore) conditionalUnchecked(r effect.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if stored, ok := m.recs[address{r.Job, r.Key}]; ok && !r.Replaces(stored) {
		return effect.StaleError(r, stored.Generation, stored.Attempt)
	}
	m.store(r)
	return nil
}

// caseInsensitiveKeys folds the case of keys, as a case-insensitive
// collation would.
type caseInsensitiveKeys struct{ *MemStore }

func (s caseInsensitiveKeys) Put(ctx context.Context, r effect.Record) error {
	key := r.Key
	r.Key = strings.ToLower(r.Key)
	err := s.MemStore.Put(ctx, r)
	r.Key = key
	return err
}

func (s caseInsensitiveKeys) Get(ctx context.Context, job, key string) (effect.Record, error) {
	r, err := s.MemStore.Get(ctx, job, strings.ToLower(key))
	r.Key = key
	return r, err
}

// keepsCallersSlice stores the writer's slice itself.
type keepsCallersSlice struct{ *MemStore }

func (s keepsCallersSlice) Put(ctx context.Context, r effect.Record) error {
	if err := s.MemStore.Put(ctx, r); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a := address{r.Job, r.Key}
	stored := s.recs[a]
	stored.Value = r.Value
	s.recs[a] = stored
	return nil
}

// terseStale refuses the right writes with a bare ErrStale.
type terseStale struct{ *MemStore }

func (s terseStale) Put(ctx context.Context, r effect.Record) error {
	err := s.MemStore.Put(ctx, r)
	if errors.Is(err, baton.ErrStale) {
		return baton.ErrStale
	}
	return err
}
