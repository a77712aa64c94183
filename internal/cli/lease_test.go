package cli

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/lease"
)

func TestLeaseReleaseRefusesLiveOwner(t *testing.T) {
	t.Parallel()
	testLeaseReleaseRefusesLiveOwner(t, newSQLiteFixture(t))
}

func testLeaseReleaseRefusesLiveOwner(t *testing.T, f *opsFixture) {
	ctx := t.Context()
	held, err := f.b.Leases.Acquire(ctx, lease.AcquireParams{Job: fx.Name, Owner: "worker-1", TTL: time.Hour, Now: time.Now()})
	require.NoError(t, err)
	fence := strconv.FormatInt(held.Fence, 10)
	unchanged := func() {
		t.Helper()
		l, err := f.b.Leases.Inspect(ctx, fx.Name)
		require.NoError(t, err)
		require.Equal(t, held, l)
	}

	code, out, errOut := f.main("lease", "show")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "lease: held by worker-1, fence "+fence)
	require.Contains(t, out, "--owner 'worker-1' --fence "+fence)

	code, _, errOut = f.main("lease", "release", "--owner", "worker-1", "--fence", fence)
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, `refused: "worker-1" holds the lease of fx until`)
	require.Contains(t, errOut, "--force-live")
	unchanged()

	// --force-live alone: the confirmation is missing, and stdin is no terminal.
	code, _, errOut = f.main("lease", "release", "--owner", "worker-1", "--fence", fence, "--force-live")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "--yes-i-know-the-owner-is-alive")
	unchanged()

	// The wrong owner or fence: the lease changed hands since the operator looked.
	code, _, errOut = f.main("lease", "release", "--owner", "worker-2", "--fence", fence, "--force-live", "--yes-i-know-the-owner-is-alive")
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, `held by "worker-1" with fence `+fence+`, not "worker-2"`)
	code, _, _ = f.main("lease", "release", "--owner", "worker-1", "--fence", strconv.FormatInt(held.Fence+1, 10), "--force-live", "--yes-i-know-the-owner-is-alive")
	require.Equal(t, ExitFailure, code)
	unchanged()

	// Forced, confirmed: released as it is, fence kept.
	code, out, errOut = f.main("lease", "release", "--owner", "worker-1", "--fence", fence, "--force-live", "--yes-i-know-the-owner-is-alive")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, `released the LIVE lease of fx held by "worker-1" (fence `+fence+`,`)
	l, err := f.b.Leases.Inspect(ctx, fx.Name)
	require.NoError(t, err)
	require.Empty(t, l.Owner)
	require.Equal(t, held.Fence, l.Fence)

	// The old holder cannot renew; a new acquisition fences it out.
	_, err = f.b.Leases.Renew(ctx, lease.RenewParams{Job: fx.Name, Owner: "worker-1", Fence: held.Fence, TTL: time.Minute, Now: time.Now()})
	require.ErrorIs(t, err, lease.ErrNotHolder)

	// Releasing again: already free.
	code, out, _ = f.main("lease", "release", "--owner", "worker-1", "--fence", fence)
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "already free")
}

func TestLeaseReleaseExpiredTakesOverWithNewFence(t *testing.T) {
	t.Parallel()
	testLeaseReleaseExpired(t, newSQLiteFixture(t))
}

func testLeaseReleaseExpired(t *testing.T, f *opsFixture) {
	ctx := t.Context()
	long := time.Now().Add(-time.Hour)
	held, err := f.b.Leases.Acquire(ctx, lease.AcquireParams{Job: fx.Name, Owner: "crashed", TTL: time.Minute, Now: long})
	require.NoError(t, err)

	code, out, errOut := f.main("lease", "show", "--json")
	require.Equal(t, ExitOK, code, errOut)
	var shown struct {
		Lease leaseStatus `json:"lease"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &shown))
	require.Equal(t, "expired", shown.Lease.State)
	require.Equal(t, "crashed", shown.Lease.Owner)

	code, out, errOut = f.main("lease", "release", "--owner", "crashed", "--fence", strconv.FormatInt(held.Fence, 10))
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "released the expired lease of fx")
	require.Contains(t, out, "taken over as fence "+strconv.FormatInt(held.Fence+1, 10))
	l, err := f.b.Leases.Inspect(ctx, fx.Name)
	require.NoError(t, err)
	require.Empty(t, l.Owner)
	require.Equal(t, held.Fence+1, l.Fence)
}

func TestLeaseBadUsage(t *testing.T) {
	t.Parallel()
	f := newSQLiteFixture(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"lease"}, "lease needs a subcommand"},
		{[]string{"lease", "steal"}, `unknown subcommand "steal"`},
		{[]string{"lease", "release", "--fence", "3"}, "--owner is required"},
		{[]string{"lease", "release", "--owner", "x"}, "--fence is required"},
		{[]string{"lease", "release", "--owner", "x", "--fence", "3", "--yes-i-know-the-owner-is-alive"}, "goes with --force-live"},
		{[]string{"lease", "show", "--job", "nope"}, `unknown job "nope"`},
	} {
		code, _, errOut := f.main(tc.args...)
		require.Equal(t, ExitUsage, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
	}
	code, _, errOut := f.main("lease", "release", "--owner", "x", "--fence", "3")
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, "has no lease record")
}
