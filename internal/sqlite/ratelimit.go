package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/batonhq/baton/internal/ratelimit"
	"github.com/batonhq/baton/internal/sqlstore"
)

// TakeUnit is Take's write (sqlstore.RateLimits): one upsert whose
// update is conditioned on the count, in one write transaction. The first take of a window
// also removes the name's expired counters.
func (d statements) TakeUnit(ctx context.Context, p ratelimit.TakeParams) (sqlstore.RateTake, error) {
	var t sqlstore.RateTake
	err := d.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		args := []any{sql.Named("name", p.Name), sql.Named("win", p.Window), sql.Named("shard", p.Shard)}
		err := tx.QueryRowContext(ctx, `
			INSERT INTO rate_limits (name, win, shard, count, expires) VALUES (:name, :win, :shard, 1, :expires)
			ON CONFLICT (name, win, shard) DO UPDATE SET count = count + 1 WHERE count < :max
			RETURNING count`, append(args, sql.Named("expires", toNanos(p.Expires)), sql.Named("max", p.Max))...).Scan(&t.Count)
		if errors.Is(err, sql.ErrNoRows) {
			t.Full = true
			return tx.QueryRowContext(ctx, `SELECT count FROM rate_limits WHERE name = :name AND win = :win AND shard = :shard`, args...).Scan(&t.Count)
		}
		if err != nil {
			return err
		}
		if t.Count == 1 {
			_, err = tx.ExecContext(ctx, `DELETE FROM rate_limits WHERE name = :name AND win < :win - 1`, args...)
		}
		return err
	})
	return t, err
}

// HoldSlot is Hold's write: one upsert whose update is conditioned
// on the slot being free, run out or the holder's.
func (d statements) HoldSlot(ctx context.Context, p ratelimit.SlotParams) (bool, error) {
	return d.db.writeOne(ctx, `
	INSERT INTO rate_slots (name, slot, holder, until) VALUES (:name, :slot, :holder, :until)
	ON CONFLICT (name, slot) DO UPDATE SET holder = :holder, until = :until
	WHERE until <= :now OR holder = :holder`,
		sql.Named("name", p.Name), sql.Named("slot", p.Slot), sql.Named("holder", p.Holder),
		sql.Named("until", toNanos(p.Until)), sql.Named("now", toNanos(p.Now)))
}

// FreeSlot is Free's write: one update conditioned on the holder.
func (d statements) FreeSlot(ctx context.Context, p ratelimit.SlotParams) (bool, error) {
	return d.db.writeOne(ctx, `UPDATE rate_slots SET holder = '', until = 0
	WHERE name = :name AND slot = :slot AND holder = :holder`,
		sql.Named("name", p.Name), sql.Named("slot", p.Slot), sql.Named("holder", p.Holder))
}
