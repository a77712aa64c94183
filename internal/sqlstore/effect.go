package sqlstore

import (
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

// PutEffect implements effect.Store's Put over put, the engine's
// conditional upsert of r with value (r.Value, never nil: an empty value
// is stored empty, not NULL). It checks r first and reports a refused
// write as effect.StaleError.
func PutEffect(r effect.Record, put func(value []byte) (EffectWrite, error)) error {
	if err := effect.Validate(r); err != nil {
		return err
	}
	value := r.Value
	if value == nil {
		value = []byte{}
	}
	w, err := put(value)
	if err != nil {
		return fmt.Errorf("put effect %s %q: %w", r.Job, r.Key, err)
	}
	if !w.Applied {
		return effect.StaleError(r, w.Generation, w.Attempt)
	}
	return nil
}

// EffectColumns are the columns of an effect record that GetEffect
// reads, in its order.
const EffectColumns = `value, generation, attempt, written_at`

// GetEffect implements effect.Store's Get over read, the engine's read of
// EffectColumns of the record (job, key).
func GetEffect(job, key string, read ReadFunc) (effect.Record, error) {
	if err := effect.ValidateKey(job, key); err != nil {
		return effect.Record{}, err
	}
	r := effect.Record{Job: job, Key: key}
	var writtenAt int64
	found, err := read(&r.Value, &r.Generation, &r.Attempt, &writtenAt)
	switch {
	case err != nil:
		return effect.Record{}, fmt.Errorf("get effect %s %q: %w", job, key, err)
	case !found:
		return effect.Record{}, effect.NotFoundError(job, key)
	}
	r.WrittenAt = Time(writtenAt)
	return r, nil
}
