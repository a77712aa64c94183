// Package leasetest is the conformance suite for lease.Store, and for its
// optional ability lease.ContentionCounter. Every adapter runs it from one
// test:
//
//	func TestLeaseStore(t *testing.T) {
//		leasetest.Run(t, leasetest.Harness{
//			NewStore:     func(t *testing.T) lease.Store { return newStore(t) },
//			Capabilities: leasetest.Capabilities{LatestRefusalByClock: true},
//		})
//	}
//
// Each case is also exported (TestAcquireContended, TestLinearizable, …),
// so that one can be run alone: leasetest.TestAcquireContended(t, h).
// Every case starts with t.Parallel() and works on its own, uniquely named
// jobs, so NewStore may hand every case the same backend table. Times are
// explicit Now values; nothing sleeps.
//
// The contention cases (TestContention…, TestCounting) need the store to
// be a lease.ContentionCounter, found as callers find it, by type
// assertion; on a store without the ability they are skipped with the
// reason. What stores with the ability may do differently is declared in
// Capabilities; a case that needs what an adapter lacks is skipped, never
// run with weaker assertions.
//
// The package's own tests run the suite against an in-memory store that
// keeps the contract, and against stores broken on purpose, which the
// suite must fail; the linearizability checker is also shown to reject the
// history of a lock that reads and then writes.
package leasetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lease"
)

// Harness is what the suite needs of an adapter.
type Harness struct {
	// NewStore returns the store a case runs against. It is called once
	// per case and may return a fresh store or a shared one: cases never
	// use each other's jobs. Cleanup belongs in t.Cleanup.
	NewStore func(t *testing.T) lease.Store

	// Capabilities says what the store does beyond what every store must.
	Capabilities Capabilities
}

// Capabilities are the behaviours the suite cannot assume of every store.
type Capabilities struct {
	// LatestRefusalByClock: the store's ContentionCounter keeps, as Last
	// and Holder, the refusal with the latest now, whatever order the
	// records land in (SQLite: one conditional UPSERT). Without it the
	// record written last is kept (DynamoDB: one unconditional UpdateItem,
	// as cheap as a count can be), and the case that records refusals out
	// of clock order is skipped.
	LatestRefusalByClock bool
}

// Case is one conformance case.
type Case struct {
	Name string
	Func func(t *testing.T, h Harness)
}

// Cases lists every conformance case, in the order Run runs them.
func Cases() []Case {
	return []Case{
		{"AcquireAbsent", TestAcquireAbsent},
		{"AcquireReleased", TestAcquireReleased},
		{"AcquireContended", TestAcquireContended},
		{"AcquireExpiredTakeover", TestAcquireExpiredTakeover},
		{"AcquireSkewAllowance", TestAcquireSkewAllowance},
		{"AcquireReentrant", TestAcquireReentrant},
		{"AcquireJobsIndependent", TestAcquireJobsIndependent},
		{"FenceStrictlyIncreases", TestFenceStrictlyIncreases},
		{"RenewExtends", TestRenewExtends},
		{"RenewNotHolder", TestRenewNotHolder},
		{"RenewAfterExpiry", TestRenewAfterExpiry},
		{"ReleaseFrees", TestReleaseFrees},
		{"ReleaseNotHolder", TestReleaseNotHolder},
		{"ReleaseExpired", TestReleaseExpired},
		{"ReleaseWithinSkew", TestReleaseWithinSkew},
		{"InspectAbsent", TestInspectAbsent},
		{"InvalidParams", TestInvalidParams},
		{"Linearizable", TestLinearizable},
		{"ContentionNeverRefused", TestContentionNeverRefused},
		{"ContentionCounts", TestContentionCounts},
		{"ContentionConcurrent", TestContentionConcurrent},
		{"ContentionJobsIndependent", TestContentionJobsIndependent},
		{"ContentionLatestByClock", TestContentionLatestByClock},
		{"ContentionInvalid", TestContentionInvalid},
		{"ContentionStreak", TestContentionStreak},
		{"Counting", TestCounting},
		{"PauseNeverPaused", TestPauseNeverPaused},
		{"PauseAndResume", TestPauseAndResume},
		{"PauseIdempotent", TestPauseIdempotent},
		{"PauseSkipCountsTicksOnce", TestPauseSkipCountsTicksOnce},
		{"PauseConcurrentSkips", TestPauseConcurrentSkips},
		{"PauseJobsIndependent", TestPauseJobsIndependent},
		{"PauseInvalid", TestPauseInvalid},
	}
}

// Run runs every case against the stores h makes.
func Run(t *testing.T, h Harness) {
	t.Helper()
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) { c.Func(t, h) })
	}
}

// epoch is the base of every clock in the suite. It is deliberately not a
// round number: adapters must keep instants to the nanosecond.
var epoch = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)

// at returns epoch + d.
func at(d time.Duration) time.Time { return epoch.Add(d) }

// uniqueJob names a job after the test plus a random suffix, so that runs
// sharing a backend table (or repeated runs against a persistent emulator)
// never meet.
func uniqueJob(t *testing.T) string {
	name := strings.NewReplacer("/", ".", " ", "_").Replace(t.Name())
	return fmt.Sprintf("%s-%016x", name, rand.Uint64())
}

// fixture is what most cases start from: a store, a unique job and a
// context.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	store lease.Store
	job   string
}

func setup(t *testing.T, h Harness) *fixture {
	t.Helper()
	return &fixture{t: t, ctx: t.Context(), store: h.NewStore(t), job: uniqueJob(t)}
}

// acquire acquires and requires success, checking the returned record
// against the contract.
func (f *fixture) acquire(owner string, ttl time.Duration, now time.Time, skew time.Duration) lease.Lease {
	f.t.Helper()
	got, err := f.store.Acquire(f.ctx, lease.AcquireParams{Job: f.job, Owner: owner, TTL: ttl, Now: now, Skew: skew})
	require.NoError(f.t, err, "acquire %s by %s at %s", f.job, owner, now)
	requireHeldRecord(f.t, got, f.job, owner, now.Add(ttl), now)
	require.Positive(f.t, got.Fence, "acquired fence")
	return got
}

// acquireHeld acquires and requires a *HeldError, returning its holder.
func (f *fixture) acquireHeld(owner string, ttl time.Duration, now time.Time, skew time.Duration) lease.Lease {
	f.t.Helper()
	got, err := f.store.Acquire(f.ctx, lease.AcquireParams{Job: f.job, Owner: owner, TTL: ttl, Now: now, Skew: skew})
	require.Error(f.t, err, "acquire %s by %s at %s returned %+v", f.job, owner, now, got)
	require.ErrorIs(f.t, err, lease.ErrHeld)
	var held *lease.HeldError
	require.ErrorAs(f.t, err, &held, "ErrHeld must come as a *HeldError")
	return held.Holder
}

func (f *fixture) renew(owner string, fence int64, ttl time.Duration, now time.Time) (lease.Lease, error) {
	f.t.Helper()
	return f.store.Renew(f.ctx, lease.RenewParams{Job: f.job, Owner: owner, Fence: fence, TTL: ttl, Now: now})
}

func (f *fixture) release(owner string, fence int64) error {
	f.t.Helper()
	return f.store.Release(f.ctx, lease.ReleaseParams{Job: f.job, Owner: owner, Fence: fence})
}

func (f *fixture) inspect() lease.Lease {
	f.t.Helper()
	got, err := f.store.Inspect(f.ctx, f.job)
	require.NoError(f.t, err, "inspect %s", f.job)
	return got
}

// requireHeldRecord checks a held record field by field; times are compared
// as instants.
func requireHeldRecord(t *testing.T, got lease.Lease, job, owner string, expiresAt, acquiredAt time.Time) {
	t.Helper()
	require.Equal(t, job, got.Job, "job")
	require.Equal(t, owner, got.Owner, "owner")
	requireInstant(t, expiresAt, got.ExpiresAt, "expires at")
	requireInstant(t, acquiredAt, got.AcquiredAt, "acquired at")
}

// requireFreeRecord checks a released record: no owner, no expiry, the
// given fence.
func requireFreeRecord(t *testing.T, got lease.Lease, job string, fence int64) {
	t.Helper()
	require.Equal(t, job, got.Job, "job")
	require.Empty(t, got.Owner, "owner of a free lease")
	require.True(t, got.ExpiresAt.IsZero(), "expiry of a free lease: %s", got.ExpiresAt)
	require.Equal(t, fence, got.Fence, "fence is kept by release")
}

// requireSame checks that two records are the same record.
func requireSame(t *testing.T, want, got lease.Lease) {
	t.Helper()
	require.Equal(t, want.Job, got.Job, "job")
	require.Equal(t, want.Owner, got.Owner, "owner")
	require.Equal(t, want.Fence, got.Fence, "fence")
	requireInstant(t, want.ExpiresAt, got.ExpiresAt, "expires at")
	requireInstant(t, want.AcquiredAt, got.AcquiredAt, "acquired at")
}

func requireInstant(t *testing.T, want, got time.Time, what string) {
	t.Helper()
	require.True(t, want.Equal(got), "%s: want %s, got %s", what,
		want.UTC().Format(time.RFC3339Nano), got.UTC().Format(time.RFC3339Nano))
}

// requireNoSentinel checks that err is an error but none of the port's
// sentinels (the contract for invalid parameters).
func requireNoSentinel(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	for _, s := range []error{lease.ErrHeld, lease.ErrNotHolder, lease.ErrNotFound} {
		require.False(t, errors.Is(err, s), "invalid parameters reported as %v: %v", s, err)
	}
}
