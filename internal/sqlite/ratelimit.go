package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/batonhq/baton/internal/ratelimit"
)

// RateLimitStore is the embedded ratelimit.Store: one row per counter.
type RateLimitStore struct{ db *DB }

var _ ratelimit.Store = (*RateLimitStore)(nil)

// NewRateLimitStore returns the rate limit store on db.
func NewRateLimitStore(db *DB) *RateLimitStore { return &RateLimitStore{db: db} }

// Take implements ratelimit.Store: one upsert whose update is conditioned
// on the count, in one write transaction. The first take of a window
// also removes the name's expired counters.
func (s *RateLimitStore) Take(ctx context.Context, p ratelimit.TakeParams) (int, error) {
	if p.Max < 1 || p.Window < 0 || p.Shard < 0 || p.Name == "" {
		return 0, fmt.Errorf("rate limit %q window %d shard %d: name, max ≥ 1, window and shard ≥ 0 required", p.Name, p.Window, p.Shard)
	}
	var n int
	var full bool
	err := s.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		args := []any{sql.Named("name", p.Name), sql.Named("win", p.Window), sql.Named("shard", p.Shard)}
		err := tx.QueryRowContext(ctx, `
			INSERT INTO rate_limits (name, win, shard, count, expires) VALUES (:name, :win, :shard, 1, :expires)
			ON CONFLICT (name, win, shard) DO UPDATE SET count = count + 1 WHERE count < :max
			RETURNING count`, append(args, sql.Named("expires", toNanos(p.Expires)), sql.Named("max", p.Max))...).Scan(&n)
		if errors.Is(err, sql.ErrNoRows) {
			full = true
			return tx.QueryRowContext(ctx, `SELECT count FROM rate_limits WHERE name = :name AND win = :win AND shard = :shard`, args...).Scan(&n)
		}
		if err != nil {
			return err
		}
		if n == 1 {
			_, err = tx.ExecContext(ctx, `DELETE FROM rate_limits WHERE name = :name AND win < :win - 1`, args...)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("rate limit %s window %d shard %d: %w", p.Name, p.Window, p.Shard, err)
	}
	if full {
		return n, fmt.Errorf("rate limit %s window %d shard %d: %w", p.Name, p.Window, p.Shard, ratelimit.ErrFull)
	}
	return n, nil
}

func checkSlot(p ratelimit.SlotParams) error {
	if p.Name == "" || p.Slot < 0 || p.Holder == "" {
		return fmt.Errorf("rate limit %q slot %d: name, holder and slot ≥ 0 required", p.Name, p.Slot)
	}
	return nil
}

// Hold implements ratelimit.Store: one upsert whose update is conditioned
// on the slot being free, run out or the holder's.
func (s *RateLimitStore) Hold(ctx context.Context, p ratelimit.SlotParams) error {
	if err := checkSlot(p); err != nil {
		return err
	}
	var n int64
	err := s.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `
		INSERT INTO rate_slots (name, slot, holder, until) VALUES (:name, :slot, :holder, :until)
		ON CONFLICT (name, slot) DO UPDATE SET holder = :holder, until = :until
		WHERE until <= :now OR holder = :holder`,
			sql.Named("name", p.Name), sql.Named("slot", p.Slot), sql.Named("holder", p.Holder),
			sql.Named("until", toNanos(p.Until)), sql.Named("now", toNanos(p.Now)))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("rate limit %s slot %d: hold: %w", p.Name, p.Slot, err)
	}
	if n == 0 {
		return fmt.Errorf("rate limit %s slot %d: %w", p.Name, p.Slot, ratelimit.ErrFull)
	}
	return nil
}

// Free implements ratelimit.Store: one update conditioned on the holder.
func (s *RateLimitStore) Free(ctx context.Context, p ratelimit.SlotParams) error {
	if err := checkSlot(p); err != nil {
		return err
	}
	var n int64
	err := s.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE rate_slots SET holder = '', until = 0
		WHERE name = :name AND slot = :slot AND holder = :holder`,
			sql.Named("name", p.Name), sql.Named("slot", p.Slot), sql.Named("holder", p.Holder))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("rate limit %s slot %d: free: %w", p.Name, p.Slot, err)
	}
	if n == 0 {
		return fmt.Errorf("rate limit %s slot %d: %w", p.Name, p.Slot, ratelimit.ErrNotHolder)
	}
	return nil
}
