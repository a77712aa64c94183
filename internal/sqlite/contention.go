package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/lease"
)

// The lease store counts refused acquisitions per job in the
// lease_contention table: one UPSERT per refusal, so counts from several
// processes add up.
var _ lease.ContentionCounter = (*LeaseStore)(nil)

// RecordContention implements lease.ContentionCounter: it adds one refusal
// of job's lease by holder at now. The latest refusal (by now) is the one
// kept as Last/Holder, whatever order the writes land in.
func (s *LeaseStore) RecordContention(ctx context.Context, job string, holder lease.Lease, now time.Time) error {
	if job == "" {
		return errors.New("record contention: empty job")
	}
	err := s.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `
INSERT INTO lease_contention (job, count, last_at, holder, holder_fence, holder_until)
VALUES (?1, 1, ?2, ?3, ?4, ?5)
ON CONFLICT (job) DO UPDATE SET
    count        = lease_contention.count + 1,
    last_at      = CASE WHEN excluded.last_at >= lease_contention.last_at THEN excluded.last_at ELSE lease_contention.last_at END,
    holder       = CASE WHEN excluded.last_at >= lease_contention.last_at THEN excluded.holder ELSE lease_contention.holder END,
    holder_fence = CASE WHEN excluded.last_at >= lease_contention.last_at THEN excluded.holder_fence ELSE lease_contention.holder_fence END,
    holder_until = CASE WHEN excluded.last_at >= lease_contention.last_at THEN excluded.holder_until ELSE lease_contention.holder_until END`,
			job, toNanos(now), holder.Owner, holder.Fence, toNanos(holder.ExpiresAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("record contention of %q: %w", job, err)
	}
	return nil
}

// Contention implements lease.ContentionCounter: job's record; Count is 0
// when it was never refused.
func (s *LeaseStore) Contention(ctx context.Context, job string) (lease.Contention, error) {
	var r lease.Contention
	var last, until int64
	r.Job, r.Holder.Job = job, job
	err := s.db.sql.QueryRowContext(ctx, `SELECT count, last_at, holder, holder_fence, holder_until FROM lease_contention WHERE job = ?`, job).
		Scan(&r.Count, &last, &r.Holder.Owner, &r.Holder.Fence, &until)
	if errors.Is(err, sql.ErrNoRows) {
		return lease.Contention{Job: job, Holder: lease.Lease{Job: job}}, nil
	}
	if err != nil {
		return lease.Contention{}, fmt.Errorf("contention of %q: %w", job, err)
	}
	r.Last, r.Holder.ExpiresAt = fromNanos(last), fromNanos(until)
	return r, nil
}
