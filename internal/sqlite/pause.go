package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/lease"
)

// The lease store keeps each job's pause flag in the job_pause table:
// every change is one conditional statement, so coordinators in several
// processes agree on it.
var _ lease.Pauser = (*LeaseStore)(nil)

// SetPause implements lease.Pauser.
func (s *LeaseStore) SetPause(ctx context.Context, p lease.SetPauseParams) (lease.Pause, error) {
	if p.Job == "" {
		return lease.Pause{}, errors.New("set pause: empty job")
	}
	err := s.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		if p.Paused { // a new pause, unless paused already
			_, err = tx.ExecContext(ctx, `
INSERT INTO job_pause (job, paused, since, until, by_whom, reason, skipped, last_skipped)
VALUES (?1, 1, ?2, 0, ?3, ?4, 0, 0)
ON CONFLICT (job) DO UPDATE SET
    paused = 1, since = excluded.since, until = 0, by_whom = excluded.by_whom,
    reason = excluded.reason, skipped = 0, last_skipped = 0
WHERE job_pause.paused = 0`, p.Job, toNanos(p.Now), p.By, p.Reason)
		} else {
			_, err = tx.ExecContext(ctx, `
UPDATE job_pause SET paused = 0, until = ?2, by_whom = ?3, reason = ?4
WHERE job = ?1 AND paused = 1`, p.Job, toNanos(p.Now), p.By, p.Reason)
		}
		return err
	})
	if err != nil {
		return lease.Pause{}, fmt.Errorf("set pause of %q: %w", p.Job, err)
	}
	return s.PauseOf(ctx, p.Job)
}

// PauseOf implements lease.Pauser.
func (s *LeaseStore) PauseOf(ctx context.Context, job string) (lease.Pause, error) {
	r := lease.Pause{Job: job}
	var paused, since, until, last int64
	err := s.db.sql.QueryRowContext(ctx, `SELECT paused, since, until, by_whom, reason, skipped, last_skipped FROM job_pause WHERE job = ?`, job).
		Scan(&paused, &since, &until, &r.By, &r.Reason, &r.Skipped, &last)
	if errors.Is(err, sql.ErrNoRows) {
		return r, nil
	}
	if err != nil {
		return lease.Pause{}, fmt.Errorf("pause of %q: %w", job, err)
	}
	r.Paused = paused == 1
	r.Since, r.Until, r.LastSkipped = fromNanos(since), fromNanos(until), fromNanos(last)
	return r, nil
}

// RecordSkipped implements lease.Pauser: one conditional UPDATE counts
// the tick when the job is paused and the tick is newer than the last
// counted.
func (s *LeaseStore) RecordSkipped(ctx context.Context, job string, nominal time.Time) (lease.Pause, error) {
	if job == "" {
		return lease.Pause{}, errors.New("record skipped: empty job")
	}
	err := s.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `
UPDATE job_pause SET skipped = skipped + 1, last_skipped = ?2
WHERE job = ?1 AND paused = 1 AND last_skipped < ?2`, job, toNanos(nominal))
		return err
	})
	if err != nil {
		return lease.Pause{}, fmt.Errorf("record skipped tick of %q: %w", job, err)
	}
	r, err := s.PauseOf(ctx, job)
	if err != nil {
		return r, err
	}
	if !r.Paused {
		return r, fmt.Errorf("record skipped tick of %q: %w", job, lease.ErrNotPaused)
	}
	return r, nil
}
