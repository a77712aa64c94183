package lease

import (
	"context"
	"errors"
	"time"
)

// ErrNotPaused is returned by Pauser.RecordSkipped when the job is not
// paused: nothing is recorded, and the tick must run.
var ErrNotPaused = errors.New("job not paused")

// Pause is one job's pause record: whether it is paused, since when and
// why, and the ticks its coordinator skipped while it was.
type Pause struct {
	Job    string
	Paused bool
	// Since is when the latest pause began; Until when it ended (zero
	// while paused). Both are zero for a job never paused.
	Since, Until time.Time
	// By and Reason say who paused (or resumed) the job, and why.
	By, Reason string
	// Skipped counts the distinct ticks skipped during the latest pause;
	// LastSkipped is the nominal time of the newest of them.
	Skipped     int64
	LastSkipped time.Time
}

// SetPauseParams pause or resume a job.
type SetPauseParams struct {
	Job    string
	Paused bool // true: pause; false: resume
	By     string
	Reason string
	Now    time.Time
}

// Pauser is an optional ability of a Store: a durable pause flag per job,
// which every coordinator reads before it takes the job's lease. A paused
// job's scheduled ticks are skipped and recorded (counted, for `baton
// status`), not run; resuming lets the next tick run, and the ticks
// skipped are not caught up. Callers find it with PauserOf.
//
// Every method is one conditional write or one read on the job's record,
// and may be called concurrently from several processes.
type Pauser interface {
	// SetPause pauses (p.Paused) or resumes p.Job at p.Now and returns the
	// record. Pausing starts a new pause: Since = Now, Until zero, Skipped
	// 0. Resuming sets Until = Now and keeps Since and the skipped count.
	// Pausing a paused job, or resuming one that is not paused, changes
	// nothing and returns the record as it is. An empty job is an error.
	SetPause(ctx context.Context, p SetPauseParams) (Pause, error)
	// PauseOf returns job's record; a job never paused has Paused false,
	// Job set, zero times and no error.
	PauseOf(ctx context.Context, job string) (Pause, error)
	// RecordSkipped records that job's tick at nominal was skipped because
	// the job is paused, and returns the record. A tick at or before
	// LastSkipped is not counted again (a duplicate trigger). When the job
	// is not paused it returns ErrNotPaused and records nothing.
	RecordSkipped(ctx context.Context, job string, nominal time.Time) (Pause, error)
}

// PauserOf returns s's Pauser, looking through the wrappers of this
// package (Counting), and false when the store has no such ability.
func PauserOf(s Store) (Pauser, bool) {
	for s != nil {
		if p, ok := s.(Pauser); ok {
			return p, true
		}
		u, ok := s.(interface{ Unwrap() Store })
		if !ok {
			return nil, false
		}
		s = u.Unwrap()
	}
	return nil, false
}
