// Package scheduler is the in-process stand-in for EventBridge: it fires a
// trigger at every tick of a schedule until its context ends.
//
// Like EventBridge it delivers the trigger at (or just after) the tick and
// passes the trigger time; the coordinator derives the nominal tick from it.
// A tick missed because Fire ran long is not fired late: the next fire is
// the first tick after the current time, so a slow tick never piles up
// triggers.
package scheduler

import (
	"context"
	"errors"
	"time"
)

// Ticker is the part of a schedule the scheduler needs.
type Ticker interface {
	// Next returns the first tick strictly after t.
	Next(t time.Time) time.Time
}

// Scheduler fires Fire at every tick of Schedule.
type Scheduler struct {
	Schedule Ticker
	// Fire is called with the trigger time, one call at a time.
	Fire func(ctx context.Context, at time.Time)
}

// Run fires until ctx is done, then returns nil.
func (s *Scheduler) Run(ctx context.Context) error {
	if s.Schedule == nil || s.Fire == nil {
		return errors.New("scheduler: Schedule and Fire are required")
	}
	for {
		now := time.Now()
		next := s.Schedule.Next(now)
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
			s.Fire(ctx, fired)
		}
	}
}
