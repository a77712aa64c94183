package sqlstore

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/internal/effect"
)

// EffectWrite is the outcome of an engine's conditional upsert of an
// effect record: whether it wrote, and when it did not, the stored
// record's (generation, attempt) that refused it.
type EffectWrite struct {
	Applied             bool
	Generation, Attempt int
}

// EffectColumns are the columns of an effect record that Get reads, in
// its order.
const EffectColumns = `value, generation, attempt, written_at`

// EffectDB is what EffectStore needs of an engine: its two statements on
// the effects table, run as the engine runs them, errors translated.
type EffectDB interface {
	// UpsertEffect inserts r with value (r.Value, never nil), or replaces
	// the stored record when r's (generation, attempt) is at least the
	// stored pair; when it writes nothing it reads the stored pair.
	UpsertEffect(ctx context.Context, r effect.Record, value []byte) (EffectWrite, error)
	// ReadEffect reads EffectColumns of the record (job, key).
	ReadEffect(ctx context.Context, job, key string) ReadFunc
}

// EffectStore is effect.Store over an engine's EffectDB.
type EffectStore struct{ DB EffectDB }

var _ effect.Store = (*EffectStore)(nil)

// Put implements effect.Store: it checks r, stores it with one
// conditional upsert (an empty value is stored empty, not NULL) and
// reports a refused write as effect.StaleError.
func (s *EffectStore) Put(ctx context.Context, r effect.Record) error {
	if err := effect.Validate(r); err != nil {
		return err
	}
	value := r.Value
	if value == nil {
		value = []byte{}
	}
	w, err := s.DB.UpsertEffect(ctx, r, value)
	if err != nil {
		return fmt.Errorf("put effect %s %q: %w", r.Job, r.Key, err)
	}
	if !w.Applied {
		return effect.StaleError(r, w.Generation, w.Attempt)
	}
	return nil
}

// Get implements effect.Store with one read.
func (s *EffectStore) Get(ctx context.Context, job, key string) (effect.Record, error) {
	if err := effect.ValidateKey(job, key); err != nil {
		return effect.Record{}, err
	}
	r := effect.Record{Job: job, Key: key}
	var writtenAt int64
	found, err := s.DB.ReadEffect(ctx, job, key)(&r.Value, &r.Generation, &r.Attempt, &writtenAt)
	switch {
	case err != nil:
		return effect.Record{}, fmt.Errorf("get effect %s %q: %w", job, key, err)
	case !found:
		return effect.Record{}, effect.NotFoundError(job, key)
	}
	r.WrittenAt = Time(writtenAt)
	return r, nil
}
