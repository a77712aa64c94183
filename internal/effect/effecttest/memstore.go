package effecttest

import (
	"bytes"
	"context"
	"sync"

	"github.com/batonhq/baton/internal/effect"
)

// MemStore is an in-memory effect.Store that passes the suite: the
// reference implementation of the contract, and a store for unit tests
// of the code that uses one. The zero value is ready to use; it must not
// be copied after first use.
type MemStore struct {
	mu   sync.Mutex
	recs map[address]effect.Record
}

var _ effect.Store = (*MemStore)(nil)

// address is a record's (job, key).
type address struct{ job, key string }

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{} }

// Put implements effect.Store.
func (m *MemStore) Put(_ context.Context, r effect.Record) error {
	if err := effect.Validate(r); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a := address{r.Job, r.Key}
	if stored, ok := m.recs[a]; ok && !r.Replaces(stored) {
		return effect.StaleError(r, stored.Generation, stored.Attempt)
	}
	m.store(r)
	return nil
}

// store sets the record of r's address to a copy of r; m.mu is held.
func (m *MemStore) store(r effect.Record) {
	if m.recs == nil {
		m.recs = map[address]effect.Record{}
	}
	r.Value = bytes.Clone(r.Value)
	r.WrittenAt = r.WrittenAt.UTC()
	m.recs[address{r.Job, r.Key}] = r
}

// Get implements effect.Store.
func (m *MemStore) Get(_ context.Context, job, key string) (effect.Record, error) {
	if err := effect.ValidateKey(job, key); err != nil {
		return effect.Record{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[address{job, key}]
	if !ok {
		return effect.Record{}, effect.NotFoundError(job, key)
	}
	r.Value = bytes.Clone(r.Value)
	return r, nil
}
