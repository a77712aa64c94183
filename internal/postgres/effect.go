package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/sqlstore"
)

// UpsertEffect runs effectPutSQL in one batch with a read of the stored
// pair, which a refusal reports (the refused upsert locks the row, so the
// read sees the record that refused it). A re-run after an unknown
// outcome applies again to the same effect (its condition is "at least",
// not "newer than").
func (d statements) UpsertEffect(ctx context.Context, r effect.Record, value []byte) (sqlstore.EffectWrite, error) {
	var w sqlstore.EffectWrite
	err := d.db.batch(ctx, nil, func(b *pgx.Batch) {
		b.Queue(effectPutSQL, r.Job, r.Key, value, r.Generation, r.Attempt, toNanos(r.WrittenAt))
		b.Queue(`SELECT generation, attempt FROM baton_effects WHERE job = $1 AND key = $2`, r.Job, r.Key)
	}, func(br pgx.BatchResults) error {
		var one int
		err := br.QueryRow().Scan(&one)
		w.Applied = err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		return br.QueryRow().Scan(&w.Generation, &w.Attempt)
	})
	return w, translate(err)
}

// effectPutSQL inserts the record, or replaces the stored one when the
// record's (generation, attempt) is at least the stored pair; it returns a
// row exactly when it wrote.
const effectPutSQL = `INSERT INTO baton_effects AS e (job, key, value, generation, attempt, written_at)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (job, key) DO UPDATE SET
	value = excluded.value, generation = excluded.generation,
	attempt = excluded.attempt, written_at = excluded.written_at
WHERE (excluded.generation, excluded.attempt) >= (e.generation, e.attempt)
RETURNING 1`

// ReadEffect implements sqlstore.EffectDB.
func (d statements) ReadEffect(ctx context.Context, job, key string) sqlstore.ReadFunc {
	return func(dest ...any) (bool, error) {
		return found(d.db.queryRow(ctx, nil, `SELECT `+sqlstore.EffectColumns+` FROM baton_effects WHERE job = $1 AND key = $2`, job, key).Scan(dest...))
	}
}
