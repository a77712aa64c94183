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

// WritePause implements sqlstore.PauseDB.
func (d statements) WritePause(ctx context.Context, p lease.SetPauseParams) error {
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

// CountSkipped implements sqlstore.PauseDB.
func (d statements) CountSkipped(ctx context.Context, job string, nominal time.Time) error {
	_, err := d.db.exec(ctx, nil, `
UPDATE baton_job_pause SET skipped = skipped + 1, last_skipped = $2
WHERE job = $1 AND paused AND last_skipped < $2`, job, toNanos(nominal))
	return translate(err)
}

// ReadPause implements sqlstore.PauseDB.
func (d statements) ReadPause(ctx context.Context, job string) sqlstore.ReadFunc {
	return func(dest ...any) (bool, error) {
		return found(d.db.queryRow(ctx, nil, `SELECT `+sqlstore.PauseColumns+` FROM baton_job_pause WHERE job = $1`, job).Scan(dest...))
	}
}
