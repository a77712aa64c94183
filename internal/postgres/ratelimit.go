package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/ratelimit"
	"github.com/batonhq/baton/internal/sqlstore"
)

// TakeUnit is Take's write (sqlstore.RateLimits): one upsert whose
// update is conditioned on the count (INSERT … ON CONFLICT DO UPDATE …
// WHERE count < max); when it writes nothing, a read of the count. The
// first take of a window also removes the name's windows before the
// previous one.
//
// A take re-run after an unknown outcome may take a second unit: the
// window then admits one fewer, never more than Max (a limit is kept on
// the safe side). Hold re-run applies again (the slot is the holder's);
// a Free re-run that finds the slot no longer the holder's reports
// success (it is not the holder's either way).
func (d statements) TakeUnit(ctx context.Context, p ratelimit.TakeParams) (sqlstore.RateTake, error) {
	var t sqlstore.RateTake
	err := d.db.queryRow(ctx, nil, `INSERT INTO baton_rate_limits (name, win, shard, count, expires) VALUES ($1, $2, $3, 1, $4)
		ON CONFLICT (name, win, shard) DO UPDATE SET count = baton_rate_limits.count + 1 WHERE baton_rate_limits.count < $5
		RETURNING count`, p.Name, p.Window, p.Shard, toNanos(p.Expires), p.Max).Scan(&t.Count)
	if errors.Is(err, pgx.ErrNoRows) {
		t.Full = true
		err = d.db.queryRow(ctx, nil, `SELECT count FROM baton_rate_limits WHERE name = $1 AND win = $2 AND shard = $3`,
			p.Name, p.Window, p.Shard).Scan(&t.Count)
		if errors.Is(err, pgx.ErrNoRows) {
			// The full window's row went between the two statements: a
			// taker of a later window, or the pruner, removed it. The
			// window is past; it was full when this take was refused.
			t.Count, err = p.Max, nil
		}
		return t, translate(err)
	}
	if err != nil {
		return t, translate(err)
	}
	if t.Count == 1 {
		if _, err := d.db.exec(ctx, nil, `DELETE FROM baton_rate_limits WHERE name = $1 AND win < $2::bigint - 1`, p.Name, p.Window); err != nil {
			return t, fmt.Errorf("clean up: %w", translate(err))
		}
	}
	return t, nil
}

// HoldSlot is Hold's write: one upsert whose update is conditioned
// on the slot being free, run out or the holder's.
func (d statements) HoldSlot(ctx context.Context, p ratelimit.SlotParams) (bool, error) {
	tag, err := d.db.exec(ctx, nil, `INSERT INTO baton_rate_slots (name, slot, holder, until) VALUES ($1, $2, $3, $4)
		ON CONFLICT (name, slot) DO UPDATE SET holder = $3, until = $4
		WHERE baton_rate_slots.until <= $5 OR baton_rate_slots.holder = $3`,
		p.Name, p.Slot, p.Holder, toNanos(p.Until), toNanos(p.Now))
	return tag.RowsAffected() > 0, translate(err)
}

// FreeSlot is Free's write: one update conditioned on the holder.
func (d statements) FreeSlot(ctx context.Context, p ratelimit.SlotParams) (bool, error) {
	var a attempts
	tag, err := d.db.exec(ctx, &a, `UPDATE baton_rate_slots SET holder = '', until = 0
		WHERE name = $1 AND slot = $2 AND holder = $3`, p.Name, p.Slot, p.Holder)
	return tag.RowsAffected() > 0 || a.unsure, translate(err)
}
