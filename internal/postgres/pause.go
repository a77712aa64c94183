package postgres

import (
	"context"
	"time"

	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/sqlstore"
)

// The lease store keeps each job's pause flag in baton_job_pause: every
// change is one conditional statement, so coordinators in several
// processes agree on it.
var _ lease.Pauser = (*LeaseStore)(nil)

// SetPause implements lease.Pauser (sqlstore.SetPause): one conditional
// upsert (a new pause unless paused already) or update (a resume of a
// paused job), then the record. Both are idempotent: a re-run after an
// unknown outcome finds the job paused (or resumed) and does nothing.
func (s *LeaseStore) SetPause(ctx context.Context, p lease.SetPauseParams) (lease.Pause, error) {
	return sqlstore.SetPause(ctx, pauseDB{s.db}, p)
}

// PauseOf implements lease.Pauser.
func (s *LeaseStore) PauseOf(ctx context.Context, job string) (lease.Pause, error) {
	return sqlstore.PauseOf(ctx, pauseDB{s.db}, job)
}

// RecordSkipped implements lease.Pauser: one conditional UPDATE counts
// the tick when the job is paused and the tick is newer than the last
// counted (so that a re-run counts it once); the record is read after
// it.
func (s *LeaseStore) RecordSkipped(ctx context.Context, job string, nominal time.Time) (lease.Pause, error) {
	return sqlstore.RecordSkipped(ctx, pauseDB{s.db}, job, nominal)
}

// pauseDB is sqlstore.PauseDB on baton_job_pause.
type pauseDB struct{ db *DB }

func (d pauseDB) WritePause(ctx context.Context, p lease.SetPauseParams) error {
	var err error
	if p.Paused {
		_, err = d.db.exec(ctx, nil, `
INSERT INTO baton_job_pause AS j (job, paused, since, until, by_whom, reason, skipped, last_skipped)
VALUES ($1, true, $2, 0, $3, $4, 0, 0)
ON CONFLICT (job) DO UPDATE SET
    paused = true, since = excluded.since, until = 0, by_whom = excluded.by_whom,
    reason = excluded.reason, skipped = 0, last_skipped = 0
WHERE NOT j.paused`, p.Job, toNanos(p.Now), p.By, p.Reason)
	} else {
		_, err = d.db.exec(ctx, nil, `
UPDATE baton_job_pause SET paused = false, until = $2, by_whom = $3, reason = $4
WHERE job = $1 AND paused`, p.Job, toNanos(p.Now), p.By, p.Reason)
	}
	return translate(err)
}

func (d pauseDB) CountSkipped(ctx context.Context, job string, nominal time.Time) error {
	_, err := d.db.exec(ctx, nil, `
UPDATE baton_job_pause SET skipped = skipped + 1, last_skipped = $2
WHERE job = $1 AND paused AND last_skipped < $2`, job, toNanos(nominal))
	return translate(err)
}

func (d pauseDB) ReadPause(ctx context.Context, job string) sqlstore.ReadFunc {
	return func(dest ...any) (bool, error) {
		return found(d.db.queryRow(ctx, nil, `SELECT `+sqlstore.PauseColumns+` FROM baton_job_pause WHERE job = $1`, job).Scan(dest...))
	}
}
