package sqlstore

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lease"
)

func TestCheckLeaseParams(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		job, owner string
		ttl        time.Duration
		now        time.Time
		want       string
	}{
		{"j", "o", time.Second, t0, ""},
		{"", "o", time.Second, t0, "empty job"},
		{"j", "", time.Second, t0, "empty owner"},
		{"j", "o", 0, t0, "non-positive TTL"},
		{"j", "o", time.Second, time.Time{}, "zero Now"},
	} {
		err := CheckLeaseParams(tc.job, tc.owner, tc.ttl, tc.now)
		if tc.want == "" {
			require.NoError(t, err)
			continue
		}
		require.ErrorIs(t, err, ErrLeaseParams, "%+v", tc)
		require.ErrorContains(t, err, tc.want)
	}
	require.ErrorIs(t, CheckLeaseHolder("j", ""), ErrLeaseParams)
	require.NoError(t, CheckLeaseHolder("j", "o"))
}

func TestScanLease(t *testing.T) {
	t.Parallel()
	require.Equal(t, 4, columns(LeaseColumns))
	l, err := ScanLease("j", scanOf("o", int64(3), Nanos(t0.Add(time.Minute)), Nanos(t0)))
	require.NoError(t, err)
	require.Equal(t, lease.Lease{Job: "j", Owner: "o", Fence: 3, ExpiresAt: t0.Add(time.Minute), AcquiredAt: t0}, l)

	// A free lease: no owner, no expiry; the fence stays.
	l, err = ScanListedLease(scanOf("k", "", int64(4), int64(0), Nanos(t0)))
	require.NoError(t, err)
	require.Equal(t, lease.Lease{Job: "k", Fence: 4, AcquiredAt: t0}, l)

	boom := errors.New("boom")
	_, err = ScanLease("j", func(...any) error { return boom })
	require.ErrorIs(t, err, boom)
}

func TestReadContention(t *testing.T) {
	t.Parallel()
	require.Equal(t, 7, columns(ContentionColumns))
	row := func(streak int64) ReadFunc {
		return func(dest ...any) (bool, error) {
			return true, scanOf(int64(5), Nanos(t0), "h", int64(2), Nanos(t0.Add(time.Minute)), streak, int64(time.Minute))(dest...)
		}
	}
	c, err := ReadContention("j", row(Nanos(t0.Add(-time.Hour))))
	require.NoError(t, err)
	require.Equal(t, lease.Contention{Job: "j", Count: 5, Last: t0, TTL: time.Minute, StreakStart: t0.Add(-time.Hour),
		Holder: lease.Lease{Job: "j", Owner: "h", Fence: 2, ExpiresAt: t0.Add(time.Minute)}}, c)

	// A row written before streaks were kept has no streak start.
	c, err = ReadContention("j", row(0))
	require.NoError(t, err)
	require.True(t, c.StreakStart.IsZero())

	c, err = ReadContention("j", func(...any) (bool, error) { return false, nil })
	require.NoError(t, err)
	require.Equal(t, lease.Contention{Job: "j", Holder: lease.Lease{Job: "j"}}, c, "never refused: count 0")

	boom := errors.New("boom")
	_, err = ReadContention("j", func(...any) (bool, error) { return false, boom })
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, `contention of "j"`)
}
