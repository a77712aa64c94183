package awsdynamodb_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/lease"
)

func TestLeaseStoreContentionCounter(t *testing.T) {
	t.Parallel()
	client, table := newTable(t)
	s := awsdynamodb.NewLeaseStore(client, table, nil)
	ctx := t.Context()
	job := uniqueName(t)

	r, err := s.Contention(ctx, job)
	require.NoError(t, err)
	require.Zero(t, r.Count)

	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			holder := lease.Lease{Job: job, Owner: "holder", Fence: 7, ExpiresAt: at.Add(time.Minute)}
			require.NoError(t, s.RecordContention(ctx, job, holder, at.Add(time.Duration(i)*time.Millisecond)))
		})
	}
	wg.Wait()
	r, err = s.Contention(ctx, job)
	require.NoError(t, err)
	require.EqualValues(t, 10, r.Count, "refusals from concurrent callers add up")
	require.Equal(t, "holder", r.Holder.Owner)
	require.EqualValues(t, 7, r.Holder.Fence)
	require.True(t, r.Holder.ExpiresAt.Equal(at.Add(time.Minute)))
	require.False(t, r.Last.Before(at))

	other, err := s.Contention(ctx, uniqueName(t))
	require.NoError(t, err)
	require.Zero(t, other.Count, "counts are per job")
}
