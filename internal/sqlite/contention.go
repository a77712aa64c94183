package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/sqlstore"
)

// The lease store counts refused acquisitions per job in the
// lease_contention table: one UPSERT per refusal, so counts from several
// processes add up.
var _ lease.ContentionCounter = (*LeaseStore)(nil)

// RecordContention implements lease.ContentionCounter: it adds one refusal
// of job's lease by holder at now. The latest refusal (by now) is the one
// kept as Last/Holder, whatever order the writes land in.
func (s *LeaseStore) RecordContention(ctx context.Context, job string, holder lease.Lease, now time.Time, ttl time.Duration) error {
	if job == "" {
		return errors.New("record contention: empty job")
	}
	st, err := s.stmt(ctx, contentionRecordSQL)
	if err != nil {
		return fmt.Errorf("record contention of %q: %w", job, err)
	}
	err = s.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.StmtContext(ctx, st).ExecContext(ctx,
			job, toNanos(now), holder.Owner, holder.Fence, toNanos(holder.ExpiresAt), int64(ttl))
		return err
	})
	if err != nil {
		return fmt.Errorf("record contention of %q: %w", job, err)
	}
	return nil
}

// contentionRecordSQL adds one refusal. A refusal at or after the latest
// one becomes the latest; it continues the streak when it names the
// streak's holder, and starts one otherwise (or when the row has none:
// streak_at 0, a row written before streaks were kept).
const contentionRecordSQL = `
INSERT INTO lease_contention (job, count, last_at, holder, holder_fence, holder_until, streak_at, ttl)
VALUES (?1, 1, ?2, ?3, ?4, ?5, ?2, ?6)
ON CONFLICT (job) DO UPDATE SET
    count        = lease_contention.count + 1,
    streak_at    = CASE WHEN excluded.last_at < lease_contention.last_at THEN lease_contention.streak_at
                        WHEN lease_contention.streak_at > 0 AND excluded.holder = lease_contention.holder THEN lease_contention.streak_at
                        ELSE excluded.last_at END,
    ttl          = CASE WHEN excluded.last_at >= lease_contention.last_at THEN excluded.ttl ELSE lease_contention.ttl END,
    last_at      = CASE WHEN excluded.last_at >= lease_contention.last_at THEN excluded.last_at ELSE lease_contention.last_at END,
    holder       = CASE WHEN excluded.last_at >= lease_contention.last_at THEN excluded.holder ELSE lease_contention.holder END,
    holder_fence = CASE WHEN excluded.last_at >= lease_contention.last_at THEN excluded.holder_fence ELSE lease_contention.holder_fence END,
    holder_until = CASE WHEN excluded.last_at >= lease_contention.last_at THEN excluded.holder_until ELSE lease_contention.holder_until END`

// Contention implements lease.ContentionCounter: job's record; Count is 0
// when it was never refused.
func (s *LeaseStore) Contention(ctx context.Context, job string) (lease.Contention, error) {
	st, err := s.stmt(ctx, `SELECT `+sqlstore.ContentionColumns+` FROM lease_contention WHERE job = ?`)
	if err != nil {
		return lease.Contention{}, fmt.Errorf("contention of %q: %w", job, err)
	}
	return sqlstore.ReadContention(job, func(dest ...any) (bool, error) {
		return found(st.QueryRowContext(ctx, job).Scan(dest...))
	})
}
