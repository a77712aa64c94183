package exec

import (
	"context"
	"errors"
	"time"
)

// ticker is the part of a schedule the scheduler needs.
type ticker interface {
	// Next returns the first tick strictly after t.
	Next(t time.Time) time.Time
}

// scheduler is the in-process stand-in for EventBridge: it calls fireFunc
// at every tick of schedule until its context ends.
//
// Like EventBridge it delivers the trigger at (or just after) the tick and
// passes the trigger time; the coordinator derives the nominal tick from it.
// A tick missed because fireFunc ran long is not fired late: the next fire
// is the first tick after the current time, so a slow tick never piles up
// triggers.
type scheduler struct {
	schedule ticker
	// fireFunc is called with the trigger time, one call at a time.
	fireFunc func(ctx context.Context, at time.Time)
}

// run fires until ctx is done, then returns nil.
func (s *scheduler) run(ctx context.Context) error {
	if s.schedule == nil || s.fireFunc == nil {
		return errors.New("scheduler: a schedule and a fire function are required")
	}
	for {
		now := time.Now()
		next := s.schedule.Next(now)
		if next.IsZero() {
			return errors.New("scheduler: the schedule has no further ticks")
		}
		t := time.NewTimer(next.Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case fired := <-t.C:
			// Never before the tick, even with a coarse timer.
			if fired.Before(next) {
				fired = next
			}
			s.fireFunc(ctx, fired)
		}
	}
}
