// Package memfake is a temporary in-memory stand-in for the SQLite
// adapters while they are written; it goes once they land.
package memfake

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/bars"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
)

type Leases struct {
	mu sync.Mutex
	m  map[string]lease.Lease
}

func NewLeases() *Leases { return &Leases{m: map[string]lease.Lease{}} }

func (s *Leases) Acquire(ctx context.Context, p lease.AcquireParams) (lease.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.m[p.Job]
	if r.Owner != "" && r.Owner != p.Owner && r.Held(p.Now, p.Skew) {
		return lease.Lease{}, &lease.HeldError{Holder: r}
	}
	r = lease.Lease{Job: p.Job, Owner: p.Owner, Fence: r.Fence + 1, ExpiresAt: p.Now.Add(p.TTL), AcquiredAt: p.Now}
	s.m[p.Job] = r
	return r, nil
}

func (s *Leases) Renew(ctx context.Context, p lease.RenewParams) (lease.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.m[p.Job]
	if r.Owner != p.Owner || r.Fence != p.Fence || !p.Now.Before(r.ExpiresAt) {
		return lease.Lease{}, lease.ErrNotHolder
	}
	r.ExpiresAt = p.Now.Add(p.TTL)
	s.m[p.Job] = r
	return r, nil
}

func (s *Leases) Release(ctx context.Context, p lease.ReleaseParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.m[p.Job]
	if r.Owner == "" || r.Owner != p.Owner || r.Fence != p.Fence {
		return lease.ErrNotHolder
	}
	r.Owner, r.ExpiresAt = "", time.Time{}
	s.m[p.Job] = r
	return nil
}

func (s *Leases) Inspect(ctx context.Context, job string) (lease.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m[job]
	if !ok {
		return lease.Lease{}, lease.ErrNotFound
	}
	return r, nil
}

type Ledger struct {
	mu    sync.Mutex
	runs  map[string]ledger.Run
	items map[string]ledger.Item
}

func NewLedger() *Ledger {
	return &Ledger{runs: map[string]ledger.Run{}, items: map[string]ledger.Item{}}
}

func tick(job string, t time.Time) string { return job + "@" + t.UTC().Format(time.RFC3339) }

func (s *Ledger) OpenRun(ctx context.Context, p ledger.OpenRunParams) (ledger.Run, ledger.OpenOutcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := tick(p.Job, p.Nominal)
	r, ok := s.runs[k]
	switch {
	case !ok || p.Force:
		gen := 1
		if ok {
			gen = r.ID.Generation + 1
		}
		r = ledger.Run{ID: ledger.RunID{Job: p.Job, Nominal: p.Nominal.UTC(), Generation: gen}, State: ledger.RunFanningOut, Fence: p.Fence, OpenedAt: p.Now, UpdatedAt: p.Now}
		s.runs[k] = r
		return r, ledger.Opened, nil
	case r.State == ledger.RunFanningOut:
		if r.Fence > p.Fence {
			return r, "", ledger.ErrConflict
		}
		r.Fence = p.Fence
		s.runs[k] = r
		return r, ledger.Resumed, nil
	default:
		return r, ledger.AlreadyFannedOut, nil
	}
}

func (s *Ledger) AdvanceRun(ctx context.Context, p ledger.AdvanceRunParams) (ledger.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := p.ID.TickKey()
	r, ok := s.runs[k]
	if !ok {
		return ledger.Run{}, ledger.ErrNotFound
	}
	if r.ID.Generation != p.ID.Generation || r.State != ledger.RunFanningOut || r.Fence > p.Fence || p.Cursor < r.Cursor {
		return r, ledger.ErrConflict
	}
	r.Cursor, r.Fence, r.UpdatedAt = p.Cursor, p.Fence, p.Now
	if p.Done {
		r.State, r.Total = ledger.RunFannedOut, p.Cursor
	}
	s.runs[k] = r
	return r, nil
}

func (s *Ledger) FinishRun(ctx context.Context, p ledger.FinishRunParams) (ledger.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := p.ID.TickKey()
	r, ok := s.runs[k]
	if !ok {
		return ledger.Run{}, ledger.ErrNotFound
	}
	if r.State.Finished() {
		return r, ledger.ErrTerminal
	}
	if r.ID.Generation != p.ID.Generation || r.State != ledger.RunFannedOut {
		return r, ledger.ErrConflict
	}
	r.State = ledger.RunComplete
	if p.Dead+p.Cancelled > 0 {
		r.State = ledger.RunPartial
	}
	r.Succeeded, r.Dead, r.Cancelled, r.FinishedAt, r.UpdatedAt = p.Succeeded, p.Dead, p.Cancelled, p.Now, p.Now
	s.runs[k] = r
	return r, nil
}

func (s *Ledger) GetRun(ctx context.Context, job string, nominal time.Time) (ledger.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[tick(job, nominal)]
	if !ok {
		return ledger.Run{}, ledger.ErrNotFound
	}
	return r, nil
}

func (s *Ledger) ListRuns(ctx context.Context, p ledger.ListRunsParams) ([]ledger.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ledger.Run
	for _, r := range s.runs {
		if r.ID.Job == p.Job && (p.Before.IsZero() || r.ID.Nominal.Before(p.Before)) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID.Nominal.After(out[j].ID.Nominal) })
	return out, nil
}

func (s *Ledger) Claim(ctx context.Context, p ledger.ClaimParams) (ledger.Item, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := p.Key.String()
	it, ok := s.items[k]
	if !ok {
		it = ledger.Item{Key: p.Key, State: ledger.ItemRunning, Owner: p.Owner, Attempt: 1, LeaseUntil: p.LeaseUntil, Fence: p.Fence, CreatedAt: p.Now, StartedAt: p.Now, UpdatedAt: p.Now}
		s.items[k] = it
		return it, nil
	}
	if it.State.Terminal() {
		return it, ledger.ErrTerminal
	}
	if it.State == ledger.ItemRunning && p.Now.Before(it.LeaseUntil.Add(p.Skew)) {
		return it, ledger.ErrHeld
	}
	if p.MaxAttempts > 0 && it.Attempt >= p.MaxAttempts {
		it.State, it.Error, it.FinishedAt, it.UpdatedAt = ledger.ItemDead, "attempts exhausted", p.Now, p.Now
		s.items[k] = it
		return it, ledger.ErrTerminal
	}
	it.State, it.Owner, it.Attempt, it.LeaseUntil, it.Fence, it.StartedAt, it.UpdatedAt = ledger.ItemRunning, p.Owner, it.Attempt+1, p.LeaseUntil, p.Fence, p.Now, p.Now
	s.items[k] = it
	return it, nil
}

func (s *Ledger) check(key ledger.ItemKey, owner string, attempt int) (ledger.Item, error) {
	it, ok := s.items[key.String()]
	if !ok {
		return ledger.Item{}, ledger.ErrNotFound
	}
	if it.State.Terminal() {
		return it, ledger.ErrTerminal
	}
	if it.State != ledger.ItemRunning || it.Owner != owner || it.Attempt != attempt {
		return it, ledger.ErrConflict
	}
	return it, nil
}

func (s *Ledger) Complete(ctx context.Context, p ledger.CompleteParams) (ledger.Item, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, err := s.check(p.Key, p.Owner, p.Attempt)
	if err != nil {
		return it, err
	}
	it.State, it.Result, it.FinishedAt, it.UpdatedAt = ledger.ItemSucceeded, p.Result, p.Now, p.Now
	s.items[p.Key.String()] = it
	return it, nil
}

func (s *Ledger) Fail(ctx context.Context, p ledger.FailParams) (ledger.Item, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, err := s.check(p.Key, p.Owner, p.Attempt)
	if err != nil {
		return it, err
	}
	it.State, it.Error, it.UpdatedAt = ledger.ItemFailed, p.Reason, p.Now
	if p.Permanent || (p.MaxAttempts > 0 && it.Attempt >= p.MaxAttempts) {
		it.State, it.FinishedAt = ledger.ItemDead, p.Now
	}
	s.items[p.Key.String()] = it
	return it, nil
}

func (s *Ledger) Release(ctx context.Context, p ledger.ReleaseParams) (ledger.Item, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, err := s.check(p.Key, p.Owner, p.Attempt)
	if err != nil {
		return it, err
	}
	it.LeaseUntil, it.UpdatedAt = p.Now, p.Now
	s.items[p.Key.String()] = it
	return it, nil
}

func (s *Ledger) Cancel(ctx context.Context, p ledger.CancelParams) (ledger.Item, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[p.Key.String()]
	if ok && it.State.Terminal() {
		return it, ledger.ErrTerminal
	}
	if !ok {
		it = ledger.Item{Key: p.Key, CreatedAt: p.Now}
	}
	it.State, it.Error, it.FinishedAt, it.UpdatedAt = ledger.ItemCancelled, p.Reason, p.Now, p.Now
	s.items[p.Key.String()] = it
	return it, nil
}

func (s *Ledger) GetItem(ctx context.Context, key ledger.ItemKey) (ledger.Item, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[key.String()]
	if !ok {
		return ledger.Item{}, ledger.ErrNotFound
	}
	return it, nil
}

func (s *Ledger) ListItems(ctx context.Context, run ledger.RunID) ([]ledger.Item, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ledger.Item
	for _, it := range s.items {
		if it.Key.Run == run {
			out = append(out, it)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key.Asset < out[j].Key.Asset })
	return out, nil
}

type Bars struct {
	mu sync.Mutex
	m  map[string]bars.Bar
}

func NewBars() *Bars { return &Bars{m: map[string]bars.Bar{}} }

func (s *Bars) Put(ctx context.Context, b bars.Bar) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := b.Asset + "@" + b.Minute.UTC().Format(time.RFC3339)
	if old, ok := s.m[k]; ok && old.Newer(b.Fence, b.Attempt) == false && (old.Fence != b.Fence || old.Attempt != b.Attempt) {
		return bars.ErrStale
	}
	s.m[k] = b
	return nil
}

func (s *Bars) Get(ctx context.Context, asset string, minute time.Time) (bars.Bar, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[asset+"@"+minute.UTC().Format(time.RFC3339)]
	if !ok {
		return bars.Bar{}, bars.ErrNotFound
	}
	return b, nil
}
