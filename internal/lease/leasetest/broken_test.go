package leasetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/suitecheck"
)

// broken lists stores broken on purpose, each with the capabilities its
// harness declares and the cases that must catch it.
var broken = map[string]struct {
	newStore func() lease.Store
	caps     Capabilities
	caughtBy []string
}{
	"ReleaseEndsLeaseAtLatestClock": {
		func() lease.Store { return newReleaseEnds() }, Capabilities{},
		[]string{"ReleaseWithinSkew"},
	},
	"RacyContentionCount": {
		func() lease.Store { return racyCount{newMemStore()} }, Capabilities{},
		[]string{"ContentionConcurrent"},
	},
	"KeepsFirstRefusal": {
		func() lease.Store { return keepsFirstRefusal{newMemStore()} }, Capabilities{},
		[]string{"ContentionCounts", "ContentionJobsIndependent", "Counting"},
	},
	"LastWrittenWins": {
		func() lease.Store { return lastWrittenWins{newMemStore()} }, Capabilities{LatestRefusalByClock: true},
		[]string{"ContentionLatestByClock"},
	},
	"SkipCountsDuplicates": {
		func() lease.Store { return countsDuplicates{newMemStore()} }, Capabilities{},
		[]string{"PauseSkipCountsTicksOnce"},
	},
	"PauseForgetsOnResume": {
		func() lease.Store { return forgetsOnResume{newMemStore()} }, Capabilities{},
		[]string{"PauseAndResume"},
	},
	"StreakPerRefusal": {
		func() lease.Store { return streakPerRefusal{newMemStore()} }, Capabilities{},
		[]string{"ContentionStreak"},
	},
	"AcquireRecordsRefusals": {
		func() lease.Store { return acquireRecords{newMemStore()} }, Capabilities{LatestRefusalByClock: true},
		[]string{"ContentionNeverRefused", "Counting"},
	},
}

// TestSuiteFindsBrokenStores runs the suite against each broken store
// (package suitecheck) and requires the cases that should catch the
// breakage to fail. Together with TestMemStore, the verdict of the suite
// depends on the store.
func TestSuiteFindsBrokenStores(t *testing.T) {
	caughtBy := map[string][]string{}
	for name, b := range broken {
		caughtBy[name] = b.caughtBy
	}
	suitecheck.RequireCaught(t, "TestBrokenStore", caughtBy)
}

// TestBrokenStore runs the suite against the broken store named by
// suitecheck.Broken; only TestSuiteFindsBrokenStores runs it.
func TestBrokenStore(t *testing.T) {
	name := suitecheck.Broken(t)
	b, ok := broken[name]
	if !ok {
		t.Fatalf("no broken store %q", name)
	}
	shared := b.newStore()
	Run(t, Harness{NewStore: func(*testing.T) lease.Store { return shared }, Capabilities: b.caps})
}

// releaseEnds releases by ending the lease at the latest time it was
// told rather than by freeing it: the record reads free, and an acquirer
// allowing no skew finds it so, but one allowing skew still finds it live
// until that time plus its allowance.
type releaseEnds struct {
	*memStore
	latest map[string]time.Time // the latest Now of each job's calls
	ended  map[string]time.Time // when each job's lease was released
}

func newReleaseEnds() *releaseEnds {
	return &releaseEnds{memStore: newMemStore(), latest: map[string]time.Time{}, ended: map[string]time.Time{}}
}

func (s *releaseEnds) seen(job string, now time.Time) {
	if now.After(s.latest[job]) {
		s.latest[job] = now
	}
}

func (s *releaseEnds) Acquire(ctx context.Context, p lease.AcquireParams) (lease.Lease, error) {
	s.mu.Lock()
	s.seen(p.Job, p.Now)
	cur, ended := s.recs[p.Job], s.ended[p.Job]
	s.mu.Unlock()
	if cur.Owner == "" && !ended.IsZero() && p.Now.Before(ended.Add(p.Skew)) {
		return lease.Lease{}, &lease.HeldError{Holder: cur}
	}
	return s.memStore.Acquire(ctx, p)
}

func (s *releaseEnds) Renew(ctx context.Context, p lease.RenewParams) (lease.Lease, error) {
	s.mu.Lock()
	s.seen(p.Job, p.Now)
	s.mu.Unlock()
	return s.memStore.Renew(ctx, p)
}

func (s *releaseEnds) Release(ctx context.Context, p lease.ReleaseParams) error {
	if err := s.memStore.Release(ctx, p); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended[p.Job] = s.latest[p.Job]
	return nil
}

// racyCount reads the count, then writes it back plus one: concurrent
// refusals are lost.
type racyCount struct{ *memStore }

func (s racyCount) RecordContention(ctx context.Context, job string, holder lease.Lease, now time.Time, ttl time.Duration) error {
	c, err := s.Contention(ctx, job)
	if err != nil || job == "" {
		return s.memStore.RecordContention(ctx, job, holder, now, ttl)
	}
	time.Sleep(2 * time.Millisecond) // the window between the two steps
	s.mu.Lock()
	defer s.mu.Unlock()
	c.Count++
	c.Last, c.Holder = now, holder
	s.contention[job] = c
	return nil
}

// keepsFirstRefusal counts every refusal but keeps the first as the
// latest.
type keepsFirstRefusal struct{ *memStore }

func (s keepsFirstRefusal) RecordContention(ctx context.Context, job string, holder lease.Lease, now time.Time, ttl time.Duration) error {
	s.mu.Lock()
	c, ok := s.contention[job]
	s.mu.Unlock()
	if err := s.memStore.RecordContention(ctx, job, holder, now, ttl); err != nil || !ok {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c.Count = s.contention[job].Count
	s.contention[job] = c
	return nil
}

// lastWrittenWins keeps the refusal recorded last, whatever its time,
// while its harness claims Capabilities.LatestRefusalByClock.
type lastWrittenWins struct{ *memStore }

func (s lastWrittenWins) RecordContention(ctx context.Context, job string, holder lease.Lease, now time.Time, ttl time.Duration) error {
	if err := s.memStore.RecordContention(ctx, job, holder, now, ttl); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.contention[job]
	c.Last, c.Holder = now, lease.Lease{Owner: holder.Owner, Fence: holder.Fence, ExpiresAt: holder.ExpiresAt}
	s.contention[job] = c
	return nil
}

// streakPerRefusal starts a new streak at every refusal: a holder that
// refuses every acquirer for hours never escalates.
type streakPerRefusal struct{ *memStore }

func (s streakPerRefusal) RecordContention(ctx context.Context, job string, holder lease.Lease, now time.Time, ttl time.Duration) error {
	if err := s.memStore.RecordContention(ctx, job, holder, now, ttl); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.contention[job]
	c.StreakStart = now
	s.contention[job] = c
	return nil
}

// acquireRecords records its own refusals, as well as counting those it
// is told of: behind lease.Counting each refusal counts twice.
type acquireRecords struct{ *memStore }

func (s acquireRecords) Acquire(ctx context.Context, p lease.AcquireParams) (lease.Lease, error) {
	l, err := s.memStore.Acquire(ctx, p)
	var held *lease.HeldError
	if errors.As(err, &held) {
		_ = s.RecordContention(ctx, p.Job, held.Holder, p.Now, p.TTL)
	}
	return l, err
}

// countsDuplicates counts every skipped tick it is told, duplicates too.
type countsDuplicates struct{ *memStore }

func (s countsDuplicates) RecordSkipped(ctx context.Context, job string, nominal time.Time) (lease.Pause, error) {
	s.mu.Lock()
	cur := s.pauses[job]
	if cur.Paused && !nominal.After(cur.LastSkipped) {
		cur.Skipped++
		s.pauses[job] = cur
	}
	s.mu.Unlock()
	return s.memStore.RecordSkipped(ctx, job, nominal)
}

// forgetsOnResume clears the record when a job is resumed: status could
// no longer say which ticks the pause skipped.
type forgetsOnResume struct{ *memStore }

func (s forgetsOnResume) SetPause(ctx context.Context, p lease.SetPauseParams) (lease.Pause, error) {
	got, err := s.memStore.SetPause(ctx, p)
	if err != nil || p.Paused {
		return got, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pauses[p.Job] = lease.Pause{Job: p.Job, By: p.By, Reason: p.Reason}
	return s.pauses[p.Job], nil
}
