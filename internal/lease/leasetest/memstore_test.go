package leasetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/lease"
)

// memStore is a correct in-memory lease.Store and lease.ContentionCounter:
// every method is one step under a mutex. It shows that the suite passes a
// store that keeps the contract.
type memStore struct {
	mu         sync.Mutex
	recs       map[string]lease.Lease
	contention map[string]lease.Contention
	pauses     map[string]lease.Pause
}

var (
	_ lease.Store             = (*memStore)(nil)
	_ lease.ContentionCounter = (*memStore)(nil)
	_ lease.Pauser            = (*memStore)(nil)
)

func (s *memStore) SetPause(_ context.Context, p lease.SetPauseParams) (lease.Pause, error) {
	if p.Job == "" {
		return lease.Pause{}, errors.New("set pause: empty job")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.pauses[p.Job]
	cur.Job = p.Job
	if cur.Paused == p.Paused {
		return cur, nil
	}
	if p.Paused {
		cur = lease.Pause{Job: p.Job, Paused: true, Since: p.Now}
	} else {
		cur.Paused, cur.Until = false, p.Now
	}
	cur.By, cur.Reason = p.By, p.Reason
	s.pauses[p.Job] = cur
	return cur, nil
}

func (s *memStore) PauseOf(_ context.Context, job string) (lease.Pause, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.pauses[job]
	cur.Job = job
	return cur, nil
}

func (s *memStore) RecordSkipped(_ context.Context, job string, nominal time.Time) (lease.Pause, error) {
	if job == "" {
		return lease.Pause{}, errors.New("record skipped: empty job")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.pauses[job]
	cur.Job = job
	if !cur.Paused {
		return cur, lease.ErrNotPaused
	}
	if nominal.After(cur.LastSkipped) {
		cur.Skipped++
		cur.LastSkipped = nominal
		s.pauses[job] = cur
	}
	return cur, nil
}

func newMemStore() *memStore {
	return &memStore{recs: map[string]lease.Lease{}, contention: map[string]lease.Contention{}, pauses: map[string]lease.Pause{}}
}

var errInvalid = errors.New("invalid lease parameters")

func (s *memStore) Acquire(_ context.Context, p lease.AcquireParams) (lease.Lease, error) {
	if p.Job == "" || p.Owner == "" || p.TTL <= 0 {
		return lease.Lease{}, fmt.Errorf("acquire %q: %w", p.Job, errInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return acquireStep(s.recs, p)
}

// acquireStep decides and writes an acquisition on recs.
func acquireStep(recs map[string]lease.Lease, p lease.AcquireParams) (lease.Lease, error) {
	cur := recs[p.Job]
	if cur.Held(p.Now, p.Skew) && cur.Owner != p.Owner {
		return lease.Lease{}, &lease.HeldError{Holder: cur}
	}
	next := lease.Lease{Job: p.Job, Owner: p.Owner, Fence: cur.Fence + 1, ExpiresAt: p.Now.Add(p.TTL), AcquiredAt: p.Now}
	recs[p.Job] = next
	return next, nil
}

func (s *memStore) Renew(_ context.Context, p lease.RenewParams) (lease.Lease, error) {
	if p.Job == "" || p.Owner == "" || p.TTL <= 0 {
		return lease.Lease{}, fmt.Errorf("renew %q: %w", p.Job, errInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.recs[p.Job]
	if !ok || cur.Owner != p.Owner || cur.Fence != p.Fence || !cur.Held(p.Now, 0) {
		return lease.Lease{}, fmt.Errorf("renew %q: %w", p.Job, lease.ErrNotHolder)
	}
	cur.ExpiresAt = p.Now.Add(p.TTL)
	s.recs[p.Job] = cur
	return cur, nil
}

func (s *memStore) Release(_ context.Context, p lease.ReleaseParams) error {
	if p.Job == "" || p.Owner == "" {
		return fmt.Errorf("release %q: %w", p.Job, errInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.recs[p.Job]
	if !ok || cur.Owner != p.Owner || cur.Fence != p.Fence {
		return fmt.Errorf("release %q: %w", p.Job, lease.ErrNotHolder)
	}
	s.recs[p.Job] = lease.Lease{Job: p.Job, Fence: cur.Fence, AcquiredAt: cur.AcquiredAt}
	return nil
}

func (s *memStore) Inspect(_ context.Context, job string) (lease.Lease, error) {
	if job == "" {
		return lease.Lease{}, fmt.Errorf("inspect: %w", errInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.recs[job]
	if !ok {
		return lease.Lease{}, fmt.Errorf("inspect %q: %w", job, lease.ErrNotFound)
	}
	return cur, nil
}

func (s *memStore) RecordContention(_ context.Context, job string, holder lease.Lease, now time.Time, ttl time.Duration) error {
	if job == "" {
		return fmt.Errorf("record contention: %w", errInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.contention[job]
	c.Count++
	if !now.Before(c.Last) {
		if c.StreakStart.IsZero() || c.Holder.Owner != holder.Owner {
			c.StreakStart = now
		}
		c.Last, c.TTL = now, ttl
		c.Holder = lease.Lease{Owner: holder.Owner, Fence: holder.Fence, ExpiresAt: holder.ExpiresAt}
	}
	s.contention[job] = c
	return nil
}

func (s *memStore) Contention(_ context.Context, job string) (lease.Contention, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.contention[job]
	c.Job, c.Holder.Job = job, job
	return c, nil
}

func TestMemStore(t *testing.T) {
	t.Parallel()
	shared := newMemStore()
	Run(t, Harness{
		NewStore:     func(*testing.T) lease.Store { return shared },
		Capabilities: Capabilities{LatestRefusalByClock: true},
	})
}

// onlyLeases hides every ability of a store but lease.Store's methods.
type onlyLeases struct{ lease.Store }

// Without the ability, the contention cases are skipped and the others
// pass.
func TestMemStoreWithoutContention(t *testing.T) {
	t.Parallel()
	Run(t, Harness{NewStore: func(*testing.T) lease.Store { return onlyLeases{newMemStore()} }})
}

// Two handles on one in-memory store: the race has one winner.
func TestMemStoreAcrossHandles(t *testing.T) {
	shared := newMemStore()
	TestAcquireAcrossHandles(t, []lease.Store{shared, shared})
}
