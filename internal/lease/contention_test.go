package lease_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lease"
)

// plainStore answers Acquire with held's HeldError when held is set, and
// with a lease otherwise. It counts nothing.
type plainStore struct {
	held *lease.Lease
}

func (s *plainStore) Acquire(_ context.Context, p lease.AcquireParams) (lease.Lease, error) {
	if s.held != nil {
		return lease.Lease{}, &lease.HeldError{Holder: *s.held}
	}
	return lease.Lease{Job: p.Job, Owner: p.Owner, Fence: 1, ExpiresAt: p.Now.Add(p.TTL), AcquiredAt: p.Now}, nil
}

func (s *plainStore) Renew(context.Context, lease.RenewParams) (lease.Lease, error) {
	return lease.Lease{}, lease.ErrNotHolder
}

func (s *plainStore) Release(context.Context, lease.ReleaseParams) error { return lease.ErrNotHolder }

func (s *plainStore) Inspect(context.Context, string) (lease.Lease, error) {
	return lease.Lease{}, lease.ErrNotFound
}

// countingStore is a plainStore with the ability, recording its calls.
type countingStore struct {
	plainStore
	recorded []lease.Contention // one per RecordContention call
	fail     error              // RecordContention's error
}

var _ lease.ContentionCounter = (*countingStore)(nil)

func (s *countingStore) RecordContention(_ context.Context, job string, holder lease.Lease, now time.Time, ttl time.Duration) error {
	if s.fail != nil {
		return s.fail
	}
	s.recorded = append(s.recorded, lease.Contention{Job: job, Count: 1, Last: now, Holder: holder})
	return nil
}

func (s *countingStore) Contention(_ context.Context, job string) (lease.Contention, error) {
	return lease.Contention{Job: job, Count: int64(len(s.recorded)), Holder: lease.Lease{Job: job}}, nil
}

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func acquire(t *testing.T, s lease.Store) error {
	t.Helper()
	_, err := s.Acquire(t.Context(), lease.AcquireParams{Job: "fx", Owner: "b", TTL: time.Minute, Now: now})
	return err
}

// A store without the ability comes back as it is: nothing to record in.
func TestCountingWithoutTheAbility(t *testing.T) {
	t.Parallel()
	s := &plainStore{}
	got := lease.Counting(s, nil)
	require.Equal(t, lease.Store(s), got)
	_, ok := got.(lease.ContentionCounter)
	require.False(t, ok)
}

// Each refused Acquire is recorded once, with the holder and the caller's
// clock; a successful one is not. The wrapper keeps the ability.
func TestCountingRecordsRefusals(t *testing.T) {
	t.Parallel()
	holder := lease.Lease{Job: "fx", Owner: "a", Fence: 7, ExpiresAt: now.Add(time.Minute), AcquiredAt: now}
	s := &countingStore{}
	leases := lease.Counting(s, nil)
	require.NoError(t, acquire(t, leases))
	require.Empty(t, s.recorded, "an acquisition that succeeds is no contention")

	s.held = &holder
	err := acquire(t, leases)
	require.ErrorIs(t, err, lease.ErrHeld)
	var held *lease.HeldError
	require.ErrorAs(t, err, &held)
	require.Equal(t, holder, held.Holder, "Acquire's result is the store's")
	require.Equal(t, []lease.Contention{{Job: "fx", Count: 1, Last: now, Holder: holder}}, s.recorded)

	counter, ok := leases.(lease.ContentionCounter)
	require.True(t, ok, "the wrapper is a ContentionCounter")
	c, err := counter.Contention(t.Context(), "fx")
	require.NoError(t, err)
	require.EqualValues(t, 1, c.Count)

	// Wrapping again changes nothing: a refusal is still recorded once.
	require.Equal(t, leases, lease.Counting(leases, nil))
	require.ErrorIs(t, acquire(t, lease.Counting(leases, nil)), lease.ErrHeld)
	require.Len(t, s.recorded, 2)
}

// A failed record is logged and changes nothing of Acquire's result.
func TestCountingRecordFailure(t *testing.T) {
	t.Parallel()
	broken := errors.New("table gone")
	s := &countingStore{plainStore: plainStore{held: &lease.Lease{Job: "fx", Owner: "a", Fence: 1}}, fail: broken}
	var log bytes.Buffer
	err := acquire(t, lease.Counting(s, slog.New(slog.NewTextHandler(&log, nil))))
	require.ErrorIs(t, err, lease.ErrHeld)
	require.NotErrorIs(t, err, broken)
	require.Contains(t, log.String(), "lease contention not recorded")
	require.Contains(t, log.String(), "table gone")
}
