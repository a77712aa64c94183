package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/sqlstore"
)

// UpsertEffect runs effectPut through the process's writer. When it
// writes nothing, the stored pair is read in the same transaction, for
// the error.
func (d statements) UpsertEffect(ctx context.Context, r effect.Record, value []byte) (sqlstore.EffectWrite, error) {
	var w sqlstore.EffectWrite
	err := d.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, effectPut, r.Job, r.Key, value, r.Generation, r.Attempt, toNanos(r.WrittenAt)).Scan(&one)
		if w.Applied = err == nil; w.Applied || !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT generation, attempt FROM effects WHERE job = ? AND key = ?`, r.Job, r.Key).
			Scan(&w.Generation, &w.Attempt)
	})
	return w, err
}

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

// ReadEffect implements sqlstore.EffectDB.
func (d statements) ReadEffect(ctx context.Context, job, key string) sqlstore.ReadFunc {
	return func(dest ...any) (bool, error) {
		return found(d.db.sql.QueryRowContext(ctx, `SELECT `+sqlstore.EffectColumns+` FROM effects WHERE job = ? AND key = ?`, job, key).Scan(dest...))
	}
}
