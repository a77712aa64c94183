package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/lease"
)

// PauseColumns are the columns of a job's pause record that PauseOf
// reads, in its order.
const PauseColumns = `paused, since, until, by_whom, reason, skipped, last_skipped`

// PauseDB is what the pause operations need of an engine: its statements
// on the job pause table, run as the engine runs them, errors translated.
type PauseDB interface {
	// WritePause stores p: a new pause unless the job is paused already,
	// or the resume of a paused job. Either does nothing when the job is
	// in p's state already, so a re-run is harmless.
	WritePause(ctx context.Context, p lease.SetPauseParams) error
	// CountSkipped counts the tick nominal when the job is paused and the
	// tick is newer than the last counted.
	CountSkipped(ctx context.Context, job string, nominal time.Time) error
	// ReadPause reads PauseColumns of job's record.
	ReadPause(ctx context.Context, job string) ReadFunc
}

// SetPause implements lease.Pauser's SetPause over db: the write, then
// the record.
func SetPause(ctx context.Context, db PauseDB, p lease.SetPauseParams) (lease.Pause, error) {
	if p.Job == "" {
		return lease.Pause{}, errors.New("set pause: empty job")
	}
	if err := db.WritePause(ctx, p); err != nil {
		return lease.Pause{}, fmt.Errorf("set pause of %q: %w", p.Job, err)
	}
	return PauseOf(ctx, db, p.Job)
}

// PauseOf implements lease.Pauser's PauseOf over db: a job without a
// record is not paused.
func PauseOf(ctx context.Context, db PauseDB, job string) (lease.Pause, error) {
	r := lease.Pause{Job: job}
	var since, until, last int64
	found, err := db.ReadPause(ctx, job)(&r.Paused, &since, &until, &r.By, &r.Reason, &r.Skipped, &last)
	switch {
	case err != nil:
		return lease.Pause{}, fmt.Errorf("pause of %q: %w", job, err)
	case !found:
		return lease.Pause{Job: job}, nil
	}
	r.Since, r.Until, r.LastSkipped = Time(since), Time(until), Time(last)
	return r, nil
}

// RecordSkipped implements lease.Pauser's RecordSkipped over db: the
// count, then the record; lease.ErrNotPaused when the job is not paused.
func RecordSkipped(ctx context.Context, db PauseDB, job string, nominal time.Time) (lease.Pause, error) {
	if job == "" {
		return lease.Pause{}, errors.New("record skipped: empty job")
	}
	if err := db.CountSkipped(ctx, job, nominal); err != nil {
		return lease.Pause{}, fmt.Errorf("record skipped tick of %q: %w", job, err)
	}
	r, err := PauseOf(ctx, db, job)
	if err != nil {
		return r, err
	}
	if !r.Paused {
		return r, fmt.Errorf("record skipped tick of %q: %w", job, lease.ErrNotPaused)
	}
	return r, nil
}
