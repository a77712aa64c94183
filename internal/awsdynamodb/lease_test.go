package awsdynamodb_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/lease"
)

func TestLeaseSmoke(t *testing.T) {
	c, table := newTable(t)
	s := awsdynamodb.NewLeaseStore(c, table, nil)
	ctx := context.Background()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l, err := s.Acquire(ctx, lease.AcquireParams{Job: "fx", Owner: "a", TTL: time.Minute, Now: now})
	require.NoError(t, err)
	require.Equal(t, int64(1), l.Fence)
	_, err = s.Acquire(ctx, lease.AcquireParams{Job: "fx", Owner: "b", TTL: time.Minute, Now: now})
	require.ErrorIs(t, err, lease.ErrHeld)
	t.Log(err)
	require.NoError(t, s.Release(ctx, lease.ReleaseParams{Job: "fx", Owner: "a", Fence: 1}))
	l, err = s.Acquire(ctx, lease.AcquireParams{Job: "fx", Owner: "b", TTL: time.Minute, Now: now})
	require.NoError(t, err)
	require.Equal(t, int64(2), l.Fence)
}

func TestLeaseCountsScratch(t *testing.T) {
	c, table := newTable(t)
	r := newRecorder(c)
	s := awsdynamodb.NewLeaseStore(r, table, nil)
	ctx := context.Background()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	_, err := s.Acquire(ctx, lease.AcquireParams{Job: "fx", Owner: "a", TTL: time.Minute, Now: now})
	require.NoError(t, err)
	t.Log(r.Counts())
	_, err = s.Acquire(ctx, lease.AcquireParams{Job: "fx", Owner: "b", TTL: time.Minute, Now: now})
	require.ErrorIs(t, err, lease.ErrHeld)
	t.Log(r.Counts())
}
