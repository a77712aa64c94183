package awsdynamodb_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/lease"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func TestLeaseRecord(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	job := uniqueName(t)

	l, err := b.leases.Acquire(ctx, lease.AcquireParams{Job: job, Owner: "a", TTL: time.Minute, Now: t0})
	require.NoError(t, err)
	require.Equal(t, lease.Lease{Job: job, Owner: "a", Fence: 1, ExpiresAt: t0.Add(time.Minute), AcquiredAt: t0}, l)

	rec := b.raw(t, "LEASE#"+job, "LEASE")
	require.Equal(t, "a", attrS(rec, "owner"))
	require.Equal(t, "1", attrN(rec, "fence"))
	require.Equal(t, strconv.FormatInt(t0.Add(time.Minute).UnixNano(), 10), attrN(rec, "expires_at"))
	require.Equal(t, strconv.FormatInt(t0.UnixNano(), 10), attrN(rec, "acquired_at"))
	require.NotContains(t, rec, "ttl", "leases are never garbage collected")

	require.NoError(t, b.leases.Release(ctx, lease.ReleaseParams{Job: job, Owner: "a", Fence: 1}))
	rec = b.raw(t, "LEASE#"+job, "LEASE")
	require.NotContains(t, rec, "owner")
	require.Equal(t, "1", attrN(rec, "fence"), "the fence survives the release")
	require.Equal(t, "0", attrN(rec, "expires_at"))

	got, err := b.leases.Inspect(ctx, job)
	require.NoError(t, err)
	require.Equal(t, lease.Lease{Job: job, Fence: 1, AcquiredAt: t0}, got)
}

func TestLeaseInvalidInput(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	for _, p := range []lease.AcquireParams{
		{Job: "", Owner: "a", TTL: time.Minute, Now: t0},
		{Job: "fx", Owner: "", TTL: time.Minute, Now: t0},
		{Job: "fx", Owner: "a", TTL: 0, Now: t0},
	} {
		_, err := b.leases.Acquire(ctx, p)
		require.Error(t, err, "%+v", p)
		require.NotErrorIs(t, err, lease.ErrHeld)
	}
	require.Empty(t, b.rec.Counts(), "invalid input costs no call")
}

// A write whose response is lost after it applied is resolved by reading
// the record back: the caller holds the lease it took.
func TestLeaseAcquireLostResponse(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	job := uniqueName(t)
	b.rec.LoseFunc = func(op string) bool { return op == "UpdateItem" }

	l, err := b.leases.Acquire(ctx, lease.AcquireParams{Job: job, Owner: "a", TTL: time.Minute, Now: t0})
	require.NoError(t, err)
	require.Equal(t, lease.Lease{Job: job, Owner: "a", Fence: 1, ExpiresAt: t0.Add(time.Minute), AcquiredAt: t0}, l)
	require.Equal(t, map[string]int{"UpdateItem": 1, "GetItem": 1}, b.rec.Counts())

	// The lease is really held: another owner is refused.
	b.rec.LoseFunc = nil
	_, err = b.leases.Acquire(ctx, lease.AcquireParams{Job: job, Owner: "b", TTL: time.Minute, Now: t0})
	require.ErrorIs(t, err, lease.ErrHeld)
}

// A lost response to a write that did not apply (its condition failed) is
// not mistaken for success, nor guessed to be contention: the error says
// the write did not apply.
func TestLeaseAcquireLostResponseNotApplied(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	job := uniqueName(t)
	_, err := b.leases.Acquire(ctx, lease.AcquireParams{Job: job, Owner: "a", TTL: time.Minute, Now: t0})
	require.NoError(t, err)

	b.rec.LoseFunc = func(op string) bool { return op == "UpdateItem" }
	_, err = b.leases.Acquire(ctx, lease.AcquireParams{Job: job, Owner: "b", TTL: time.Minute, Now: t0})
	require.Error(t, err)
	require.NotErrorIs(t, err, lease.ErrHeld)
	require.ErrorContains(t, err, "not applied")

	got, err := b.leases.Inspect(ctx, job)
	require.NoError(t, err)
	require.Equal(t, "a", got.Owner)
}

// A request that failed before reaching the server is resolved the same
// way, and the caller's cancelled context does not stop the resolving read.
func TestLeaseAcquireTransportErrorCancelled(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	job := uniqueName(t)
	sent := errors.New("dial tcp: connection refused")
	b.rec.FailFunc = func(op string) error {
		if op == "UpdateItem" {
			cancel()
			return sent
		}
		return nil
	}
	_, err := b.leases.Acquire(ctx, lease.AcquireParams{Job: job, Owner: "a", TTL: time.Minute, Now: t0})
	require.ErrorIs(t, err, sent)
	require.ErrorContains(t, err, "not applied")
	require.Equal(t, map[string]int{"UpdateItem": 1, "GetItem": 1}, b.rec.Counts())

	_, err = b.leases.Inspect(context.Background(), job)
	require.ErrorIs(t, err, lease.ErrNotFound)
}

// When the resolving read fails too, the outcome is reported unknown.
func TestLeaseAcquireOutcomeUnknown(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	job := uniqueName(t)
	b.rec.LoseFunc = func(op string) bool { return op == "UpdateItem" }
	b.rec.FailFunc = func(op string) error {
		if op == "GetItem" {
			return errors.New("connection reset by peer")
		}
		return nil
	}
	_, err := b.leases.Acquire(context.Background(), lease.AcquireParams{Job: job, Owner: "a", TTL: time.Minute, Now: t0})
	require.ErrorContains(t, err, "outcome unknown")
	require.NotErrorIs(t, err, lease.ErrHeld)
}

// The SDK's retryer resends a write whose response was lost; the resent
// release then fails its condition (the owner is gone). The record carries
// the first send's token, so the release is reported as done.
func TestLeaseReleaseResent(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	job := uniqueName(t)
	l, err := b.leases.Acquire(ctx, lease.AcquireParams{Job: job, Owner: "a", TTL: time.Minute, Now: t0})
	require.NoError(t, err)

	b.rec.DupFunc = func(op string) bool { return op == "UpdateItem" }
	require.NoError(t, b.leases.Release(ctx, lease.ReleaseParams{Job: job, Owner: "a", Fence: l.Fence}))
	b.rec.DupFunc = nil
	// A real second release is refused.
	require.ErrorIs(t, b.leases.Release(ctx, lease.ReleaseParams{Job: job, Owner: "a", Fence: l.Fence}), lease.ErrNotHolder)
}

// Expiry is decided inside the condition with the caller's clock and skew.
func TestLeaseExpiryBoundary(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	job := uniqueName(t)
	skew := 2 * time.Second
	_, err := b.leases.Acquire(ctx, lease.AcquireParams{Job: job, Owner: "a", TTL: time.Minute, Now: t0})
	require.NoError(t, err)
	expiry := t0.Add(time.Minute)

	_, err = b.leases.Acquire(ctx, lease.AcquireParams{Job: job, Owner: "b", TTL: time.Minute, Now: expiry.Add(skew - time.Nanosecond), Skew: skew})
	var held *lease.HeldError
	require.ErrorAs(t, err, &held)
	require.Equal(t, "a", held.Holder.Owner)
	require.Equal(t, expiry, held.Holder.ExpiresAt)

	l, err := b.leases.Acquire(ctx, lease.AcquireParams{Job: job, Owner: "b", TTL: time.Minute, Now: expiry.Add(skew), Skew: skew})
	require.NoError(t, err)
	require.Equal(t, int64(2), l.Fence)

	// Renew has no skew allowance: at its own expiry the holder is out.
	_, err = b.leases.Renew(ctx, lease.RenewParams{Job: job, Owner: "b", Fence: 2, TTL: time.Minute, Now: l.ExpiresAt})
	require.ErrorIs(t, err, lease.ErrNotHolder)
	r, err := b.leases.Renew(ctx, lease.RenewParams{Job: job, Owner: "b", Fence: 2, TTL: time.Minute, Now: l.ExpiresAt.Add(-time.Nanosecond)})
	require.NoError(t, err)
	require.Equal(t, l.ExpiresAt.Add(time.Minute-time.Nanosecond), r.ExpiresAt)
	require.Equal(t, l.AcquiredAt, r.AcquiredAt)
}

// Concurrent acquisitions on one job: exactly one wins, the others see its
// record.
func TestLeaseAcquireConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	job := uniqueName(t)
	const n = 8
	type result struct {
		l   lease.Lease
		err error
	}
	results := make(chan result, n)
	for i := range n {
		go func() {
			l, err := b.leases.Acquire(ctx, lease.AcquireParams{Job: job, Owner: fmt.Sprint("o", i), TTL: time.Minute, Now: t0})
			results <- result{l, err}
		}()
	}
	var winners []lease.Lease
	var losers []*lease.HeldError
	for range n {
		r := <-results
		if r.err == nil {
			winners = append(winners, r.l)
			continue
		}
		var held *lease.HeldError
		require.ErrorAs(t, r.err, &held)
		losers = append(losers, held)
	}
	require.Len(t, winners, 1)
	require.Equal(t, int64(1), winners[0].Fence)
	for _, h := range losers {
		require.Equal(t, winners[0].Owner, h.Holder.Owner)
		require.Equal(t, int64(1), h.Holder.Fence)
	}
}

// On a server that does not return the old record, a refused acquisition
// whose record is free again by the time it is read is retried, not
// reported as contention with a free lease.
func TestLeaseAcquireRetriesWhenFreedMeanwhile(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	job := uniqueName(t)
	refused := false
	b.rec.FailFunc = func(op string) error {
		if op == "UpdateItem" && !refused {
			refused = true // as if a holder had released between the write and the read
			return &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
		}
		return nil
	}
	l, err := b.leases.Acquire(context.Background(), lease.AcquireParams{Job: job, Owner: "a", TTL: time.Minute, Now: t0})
	require.NoError(t, err)
	require.Equal(t, int64(1), l.Fence)
	require.Equal(t, map[string]int{"UpdateItem": 2, "GetItem": 1}, b.rec.Counts())
}

// A lock is under LOCK#<key> (its contention in the same partition), never
// the LEASE# record of a job of the same name, and carries no ttl: its
// fence is never garbage collected.
func TestLockRecord(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	name := uniqueName(t)
	locks := awsdynamodb.NewLockStore(b.rec, b.table, nil)

	job, err := b.leases.Acquire(ctx, lease.AcquireParams{Job: name, Owner: "coordinator", TTL: time.Minute, Now: t0})
	require.NoError(t, err)
	l, err := locks.Acquire(ctx, lease.AcquireParams{Job: name, Owner: "app", TTL: time.Minute, Now: t0})
	require.NoError(t, err, "the job's lease must not hold the lock of the same name")
	require.EqualValues(t, 1, l.Fence)
	rec := b.raw(t, "LOCK#"+name, "LOCK")
	require.Equal(t, "app", attrS(rec, "owner"))
	require.NotContains(t, rec, "ttl", "locks are never garbage collected")
	require.Equal(t, "coordinator", attrS(b.raw(t, "LEASE#"+name, "LEASE"), "owner"))

	_, err = locks.Acquire(ctx, lease.AcquireParams{Job: name, Owner: "other", TTL: time.Minute, Now: t0})
	require.ErrorIs(t, err, lease.ErrHeld)
	require.NoError(t, locks.RecordContention(ctx, name, l, t0, time.Minute))
	require.Equal(t, "1", attrN(b.raw(t, "LOCK#"+name, "CONTENTION"), "count"))
	c, err := b.leases.Contention(ctx, name)
	require.NoError(t, err)
	require.Zero(t, c.Count, "a lock's contention is not its namesake job's")
	_ = job
}

// A contention record written before streaks were kept (no streak_at)
// reads without a streak, and its next refusal starts one, even by the
// same holder.
func TestContentionRecordWithoutStreak(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	job := uniqueName(t)
	_, err := b.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "CONTENTION#" + job}, "sk": &types.AttributeValueMemberS{Value: "CONTENTION"},
		"count": &types.AttributeValueMemberN{Value: "7"}, "last_at": &types.AttributeValueMemberN{Value: "1000"},
		"holder": &types.AttributeValueMemberS{Value: "a"}, "holder_fence": &types.AttributeValueMemberN{Value: "3"},
		"holder_until": &types.AttributeValueMemberN{Value: "2000"},
	}})
	require.NoError(t, err)
	got, err := b.leases.Contention(ctx, job)
	require.NoError(t, err)
	require.EqualValues(t, 7, got.Count)
	require.True(t, got.StreakStart.IsZero())
	require.Zero(t, got.TTL)

	require.NoError(t, b.leases.RecordContention(ctx, job, lease.Lease{Owner: "a", Fence: 3}, t0, time.Minute))
	got, err = b.leases.Contention(ctx, job)
	require.NoError(t, err)
	require.EqualValues(t, 8, got.Count)
	require.True(t, t0.Equal(got.StreakStart), "streak start %s", got.StreakStart)
	require.NoError(t, b.leases.RecordContention(ctx, job, lease.Lease{Owner: "a", Fence: 3}, t0.Add(time.Minute), time.Minute))
	got, err = b.leases.Contention(ctx, job)
	require.NoError(t, err)
	require.True(t, t0.Equal(got.StreakStart), "the same holder continues the streak: %s", got.StreakStart)
}
