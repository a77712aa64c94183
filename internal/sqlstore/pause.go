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

// Pauses is lease.Pauser over an engine's PauseDB: an engine's lease
// store embeds it.
type Pauses struct{ DB PauseDB }

// SetPause implements lease.Pauser: the write, then the record.
func (s Pauses) SetPause(ctx context.Context, p lease.SetPauseParams) (lease.Pause, error) {
	if p.Job == "" {
		return lease.Pause{}, errors.New("set pause: empty job")
	}
	if err := s.DB.WritePause(ctx, p); err != nil {
		return lease.Pause{}, fmt.Errorf("set pause of %q: %w", p.Job, err)
	}
	return s.PauseOf(ctx, p.Job)
}

// PauseOf implements lease.Pauser: a job without a record is not paused.
func (s Pauses) PauseOf(ctx context.Context, job string) (lease.Pause, error) {
	r := lease.Pause{Job: job}
	var since, until, last int64
	found, err := s.DB.ReadPause(ctx, job)(&r.Paused, &since, &until, &r.By, &r.Reason, &r.Skipped, &last)
	switch {
	case err != nil:
		return lease.Pause{}, fmt.Errorf("pause of %q: %w", job, err)
	case !found:
		return lease.Pause{Job: job}, nil
	}
	r.Since, r.Until, r.LastSkipped = Time(since), Time(until), Time(last)
	return r, nil
}

// RecordSkipped implements lease.Pauser: the count, then the record;
// lease.ErrNotPaused when the job is not paused.
func (s Pauses) RecordSkipped(ctx context.Context, job string, nominal time.Time) (lease.Pause, error) {
	if job == "" {
		return lease.Pause{}, errors.New("record skipped: empty job")
	}
	if err := s.DB.CountSkipped(ctx, job, nominal); err != nil {
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
