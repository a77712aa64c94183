package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/sqlstore"
)

// The lease store keeps each job's pause flag in the job_pause table:
// every change is one conditional statement, so coordinators in several
// processes agree on it.
var _ lease.Pauser = (*LeaseStore)(nil)

// WritePause implements sqlstore.PauseDB.
func (d statements) WritePause(ctx context.Context, p lease.SetPauseParams) error {
	return d.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
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
}

// CountSkipped implements sqlstore.PauseDB.
func (d statements) CountSkipped(ctx context.Context, job string, nominal time.Time) error {
	_, err := d.db.writeOne(ctx, `
UPDATE job_pause SET skipped = skipped + 1, last_skipped = ?2
WHERE job = ?1 AND paused = 1 AND last_skipped < ?2`, job, toNanos(nominal))
	return err
}

// ReadPause implements sqlstore.PauseDB. (paused is 0 or 1, which
// database/sql scans into a bool.)
func (d statements) ReadPause(ctx context.Context, job string) sqlstore.ReadFunc {
	return func(dest ...any) (bool, error) {
		return found(d.db.sql.QueryRowContext(ctx, `SELECT `+sqlstore.PauseColumns+` FROM job_pause WHERE job = ?`, job).Scan(dest...))
	}
}
