package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/batonhq/baton/internal/effect"
)

// EffectStore implements effect.Store on the database's effects table.
type EffectStore struct {
	db *DB
}

var _ effect.Store = (*EffectStore)(nil)

// NewEffectStore returns the effect store of db.
func NewEffectStore(db *DB) *EffectStore { return &EffectStore{db: db} }

// effectPut inserts the record, or replaces the stored one when the
// record's (generation, attempt) is at least the stored pair; it returns
// a row exactly when it wrote.
const effectPut = `INSERT INTO effects (job, key, value, generation, attempt, written_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (job, key) DO UPDATE SET
	value = excluded.value, generation = excluded.generation,
	attempt = excluded.attempt, written_at = excluded.written_at
WHERE (excluded.generation, excluded.attempt) >= (effects.generation, effects.attempt)
RETURNING 1`

// Put implements effect.Store: one conditional upsert, through the
// process's writer. When it writes nothing, the stored pair is read in
// the same transaction, for the error.
func (s *EffectStore) Put(ctx context.Context, r effect.Record) error {
	if err := effect.Validate(r); err != nil {
		return err
	}
	value := r.Value
	if value == nil {
		value = []byte{} // NOT NULL: an empty value is an empty blob
	}
	var applied bool
	var gen, attempt int
	err := s.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, effectPut, r.Job, r.Key, value, r.Generation, r.Attempt, toNanos(r.WrittenAt)).Scan(&one)
		if err == nil {
			applied = true
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT generation, attempt FROM effects WHERE job = ? AND key = ?`, r.Job, r.Key).
			Scan(&gen, &attempt)
	})
	if err != nil {
		return fmt.Errorf("put effect %s %q: %w", r.Job, r.Key, err)
	}
	if !applied {
		return effect.StaleError(r, gen, attempt)
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
	err := s.db.sql.QueryRowContext(ctx, `SELECT value, generation, attempt, written_at FROM effects WHERE job = ? AND key = ?`, job, key).
		Scan(&r.Value, &r.Generation, &r.Attempt, &writtenAt)
	if errors.Is(err, sql.ErrNoRows) {
		return effect.Record{}, effect.NotFoundError(job, key)
	}
	if err != nil {
		return effect.Record{}, fmt.Errorf("get effect %s %q: %w", job, key, err)
	}
	r.WrittenAt = fromNanos(writtenAt)
	return r, nil
}
