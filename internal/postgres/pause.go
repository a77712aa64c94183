package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/lease"
)

// The lease store keeps each job's pause flag in baton_job_pause: every
// change is one conditional statement, so coordinators in several
// processes agree on it.
var _ lease.Pauser = (*LeaseStore)(nil)

// SetPause implements lease.Pauser: one conditional upsert (a new pause
// unless paused already) or update (a resume of a paused job), then the
// record. Both are idempotent: a re-run after an unknown outcome finds
// the job paused (or resumed) and does nothing.
func (s *LeaseStore) SetPause(ctx context.Context, p lease.SetPauseParams) (lease.Pause, error) {
	if p.Job == "" {
		return lease.Pause{}, errors.New("set pause: empty job")
	}
	var err error
	if p.Paused {
		_, err = s.db.exec(ctx, nil, `
INSERT INTO baton_job_pause AS j (job, paused, since, until, by_whom, reason, skipped, last_skipped)
VALUES ($1, true, $2, 0, $3, $4, 0, 0)
ON CONFLICT (job) DO UPDATE SET
    paused = true, since = excluded.since, until = 0, by_whom = excluded.by_whom,
    reason = excluded.reason, skipped = 0, last_skipped = 0
WHERE NOT j.paused`, p.Job, toNanos(p.Now), p.By, p.Reason)
	} else {
		_, err = s.db.exec(ctx, nil, `
UPDATE baton_job_pause SET paused = false, until = $2, by_whom = $3, reason = $4
WHERE job = $1 AND paused`, p.Job, toNanos(p.Now), p.By, p.Reason)
	}
	if err != nil {
		return lease.Pause{}, fmt.Errorf("set pause of %q: %w", p.Job, translate(err))
	}
	return s.PauseOf(ctx, p.Job)
}

// PauseOf implements lease.Pauser.
func (s *LeaseStore) PauseOf(ctx context.Context, job string) (lease.Pause, error) {
	r := lease.Pause{Job: job}
	var since, until, last int64
	err := s.db.queryRow(ctx, nil, `SELECT paused, since, until, by_whom, reason, skipped, last_skipped FROM baton_job_pause WHERE job = $1`, job).
		Scan(&r.Paused, &since, &until, &r.By, &r.Reason, &r.Skipped, &last)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, nil
	}
	if err != nil {
		return lease.Pause{}, fmt.Errorf("pause of %q: %w", job, translate(err))
	}
	r.Since, r.Until, r.LastSkipped = fromNanos(since), fromNanos(until), fromNanos(last)
	return r, nil
}

// RecordSkipped implements lease.Pauser: one conditional UPDATE counts
// the tick when the job is paused and the tick is newer than the last
// counted (so that a re-run counts it once); the record is read after
// it.
func (s *LeaseStore) RecordSkipped(ctx context.Context, job string, nominal time.Time) (lease.Pause, error) {
	if job == "" {
		return lease.Pause{}, errors.New("record skipped: empty job")
	}
	_, err := s.db.exec(ctx, nil, `
UPDATE baton_job_pause SET skipped = skipped + 1, last_skipped = $2
WHERE job = $1 AND paused AND last_skipped < $2`, job, toNanos(nominal))
	if err != nil {
		return lease.Pause{}, fmt.Errorf("record skipped tick of %q: %w", job, translate(err))
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
