package awsdynamodb_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
)

// TestCalls pins the DynamoDB calls each operation costs, on two servers:
//
//   - "emulator": the test server as it is. It does not return the old
//     record with a failed condition, so every refused write costs one
//     more consistent GetItem.
//   - "dynamodb": the same server made to return the old record with a
//     failed condition (ReturnValuesOnConditionCheckFailure ALL_OLD), as
//     DynamoDB does: a refused write is one call.
//
// The figures are exact: a change that adds a round trip fails here.
func TestCalls(t *testing.T) {
	t.Parallel()
	c, table := newTable(t)
	ctx := context.Background()
	plain := struct {
		leases  *awsdynamodb.LeaseStore
		ledger  *awsdynamodb.LedgerStore
		effects *awsdynamodb.EffectStore
	}{awsdynamodb.NewLeaseStore(c, table, nil), awsdynamodb.NewLedgerStore(c, table, nil), awsdynamodb.NewEffectStore(c, table, nil)}

	type stores struct {
		leases  *awsdynamodb.LeaseStore
		ledger  *awsdynamodb.LedgerStore
		effects *awsdynamodb.EffectStore
		// seen reads run with the measured store, uncounted, as a
		// consumer's vouch does before it touches the run's items: the
		// store learns the run's item partitions from it.
		seen func(t *testing.T, run ledger.RunID)
	}
	acquire := func(job, owner string, now time.Time) lease.AcquireParams {
		return lease.AcquireParams{Job: job, Owner: owner, TTL: time.Minute, Now: now, Skew: time.Second}
	}
	// fanned opens a fanned-out run of a fresh job and returns its id.
	fanned := func(t *testing.T) ledger.RunID {
		return openFanned(t, plain.ledger, uniqueName(t), 1).ID
	}
	claim := func(id ledger.RunID, owner string, now time.Time) ledger.ClaimParams {
		return ledger.ClaimParams{Key: ledger.ItemKey{Run: id, Asset: "EURUSD"}, Owner: owner, LeaseUntil: now.Add(time.Minute), MaxAttempts: 1, Now: now}
	}

	for _, tc := range []struct {
		name string
		// runFunc prepares state with the plain stores and runs the measured
		// operation with s, checking its result.
		runFunc            func(t *testing.T, s stores)
		emulator, dynamodb map[string]int
	}{
		{
			name: "acquire free",
			runFunc: func(t *testing.T, s stores) {
				_, err := s.leases.Acquire(ctx, acquire(uniqueName(t), "a", t0))
				require.NoError(t, err)
			},
			emulator: map[string]int{"UpdateItem": 1},
			dynamodb: map[string]int{"UpdateItem": 1},
		},
		{
			name: "acquire contended",
			runFunc: func(t *testing.T, s stores) {
				job := uniqueName(t)
				_, err := plain.leases.Acquire(ctx, acquire(job, "a", t0))
				require.NoError(t, err)
				_, err = s.leases.Acquire(ctx, acquire(job, "b", t0))
				require.ErrorIs(t, err, lease.ErrHeld)
			},
			emulator: map[string]int{"UpdateItem": 1, "GetItem": 1},
			dynamodb: map[string]int{"UpdateItem": 1},
		},
		{
			name: "acquire expired but held within skew",
			runFunc: func(t *testing.T, s stores) {
				job := uniqueName(t)
				_, err := plain.leases.Acquire(ctx, acquire(job, "a", t0))
				require.NoError(t, err)
				_, err = s.leases.Acquire(ctx, acquire(job, "b", t0.Add(time.Minute+time.Second/2)))
				require.ErrorIs(t, err, lease.ErrHeld)
			},
			emulator: map[string]int{"UpdateItem": 1, "GetItem": 1},
			dynamodb: map[string]int{"UpdateItem": 1},
		},
		{
			name: "acquire expired",
			runFunc: func(t *testing.T, s stores) {
				job := uniqueName(t)
				_, err := plain.leases.Acquire(ctx, acquire(job, "a", t0))
				require.NoError(t, err)
				l, err := s.leases.Acquire(ctx, acquire(job, "b", t0.Add(time.Minute+time.Second)))
				require.NoError(t, err)
				require.Equal(t, int64(2), l.Fence)
			},
			emulator: map[string]int{"UpdateItem": 1},
			dynamodb: map[string]int{"UpdateItem": 1},
		},
		{
			name: "acquire, renew, release",
			runFunc: func(t *testing.T, s stores) {
				job := uniqueName(t)
				l, err := s.leases.Acquire(ctx, acquire(job, "a", t0))
				require.NoError(t, err)
				_, err = s.leases.Renew(ctx, lease.RenewParams{Job: job, Owner: "a", Fence: l.Fence, TTL: time.Minute, Now: t0})
				require.NoError(t, err)
				require.NoError(t, s.leases.Release(ctx, lease.ReleaseParams{Job: job, Owner: "a", Fence: l.Fence}))
			},
			emulator: map[string]int{"UpdateItem": 3},
			dynamodb: map[string]int{"UpdateItem": 3},
		},
		{
			name: "release refused",
			runFunc: func(t *testing.T, s stores) {
				job := uniqueName(t)
				_, err := plain.leases.Acquire(ctx, acquire(job, "a", t0))
				require.NoError(t, err)
				require.ErrorIs(t, s.leases.Release(ctx, lease.ReleaseParams{Job: job, Owner: "b", Fence: 1}), lease.ErrNotHolder)
			},
			emulator: map[string]int{"UpdateItem": 1, "GetItem": 1},
			dynamodb: map[string]int{"UpdateItem": 1},
		},
		{
			name: "new item claim and complete",
			runFunc: func(t *testing.T, s stores) {
				id := fanned(t)
				s.seen(t, id)
				it, err := s.ledger.Claim(ctx, claim(id, "w1", t0))
				require.NoError(t, err)
				_, err = s.ledger.Complete(ctx, ledger.CompleteParams{Key: it.Key, Owner: "w1", Attempt: it.Attempt, Now: t0})
				require.NoError(t, err)
			},
			emulator: map[string]int{"PutItem": 1, "UpdateItem": 1},
			dynamodb: map[string]int{"PutItem": 1, "UpdateItem": 1},
		},
		{
			// A process that has not read the run learns its item
			// partitions with one consistent read, once per generation.
			name: "claim and complete in a process that has not read the run",
			runFunc: func(t *testing.T, s stores) {
				id := fanned(t)
				it, err := s.ledger.Claim(ctx, claim(id, "w1", t0))
				require.NoError(t, err)
				_, err = s.ledger.Complete(ctx, ledger.CompleteParams{Key: it.Key, Owner: "w1", Attempt: it.Attempt, Now: t0})
				require.NoError(t, err)
			},
			emulator: map[string]int{"GetItem": 1, "PutItem": 1, "UpdateItem": 1},
			dynamodb: map[string]int{"GetItem": 1, "PutItem": 1, "UpdateItem": 1},
		},
		{
			name: "duplicate claim",
			runFunc: func(t *testing.T, s stores) {
				id := fanned(t)
				s.seen(t, id)
				_, err := plain.ledger.Claim(ctx, claim(id, "w1", t0))
				require.NoError(t, err)
				_, err = s.ledger.Claim(ctx, claim(id, "w2", t0))
				require.ErrorIs(t, err, ledger.ErrHeld)
			},
			emulator: map[string]int{"PutItem": 1, "GetItem": 1},
			dynamodb: map[string]int{"PutItem": 1},
		},
		{
			name: "claim of a succeeded item",
			runFunc: func(t *testing.T, s stores) {
				id := fanned(t)
				s.seen(t, id)
				it, err := plain.ledger.Claim(ctx, claim(id, "w1", t0))
				require.NoError(t, err)
				_, err = plain.ledger.Complete(ctx, ledger.CompleteParams{Key: it.Key, Owner: "w1", Attempt: 1, Now: t0})
				require.NoError(t, err)
				_, err = s.ledger.Claim(ctx, claim(id, "w2", t0))
				require.ErrorIs(t, err, ledger.ErrTerminal)
			},
			emulator: map[string]int{"PutItem": 1, "GetItem": 1},
			dynamodb: map[string]int{"PutItem": 1},
		},
		{
			name: "claim of an expired item out of attempts",
			runFunc: func(t *testing.T, s stores) {
				id := fanned(t)
				s.seen(t, id)
				_, err := plain.ledger.Claim(ctx, claim(id, "w1", t0))
				require.NoError(t, err)
				it, err := s.ledger.Claim(ctx, claim(id, "w2", t0.Add(time.Hour)))
				require.ErrorIs(t, err, ledger.ErrTerminal)
				require.Equal(t, ledger.ItemDead, it.State)
			},
			emulator: map[string]int{"PutItem": 1, "GetItem": 1, "UpdateItem": 1},
			dynamodb: map[string]int{"PutItem": 1, "UpdateItem": 1},
		},
		{
			name: "claim of an expired item with attempts left",
			runFunc: func(t *testing.T, s stores) {
				id := fanned(t)
				s.seen(t, id)
				_, err := plain.ledger.Claim(ctx, claim(id, "w1", t0))
				require.NoError(t, err)
				p := claim(id, "w2", t0.Add(time.Hour))
				p.MaxAttempts = 2
				it, err := s.ledger.Claim(ctx, p)
				require.NoError(t, err)
				require.Equal(t, 2, it.Attempt)
			},
			emulator: map[string]int{"PutItem": 1, "GetItem": 1, "UpdateItem": 1},
			dynamodb: map[string]int{"PutItem": 1, "UpdateItem": 1},
		},
		{
			name: "open, advance, finish",
			runFunc: func(t *testing.T, s stores) {
				run, _, err := s.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: uniqueName(t), Nominal: t0, Fence: 1, Now: t0})
				require.NoError(t, err)
				_, err = s.ledger.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: 1, Done: true, Now: t0})
				require.NoError(t, err)
				_, err = s.ledger.FinishRun(ctx, ledger.FinishRunParams{ID: run.ID, Succeeded: 1, Now: t0})
				require.NoError(t, err)
			},
			emulator: map[string]int{"UpdateItem": 3},
			dynamodb: map[string]int{"UpdateItem": 3},
		},
		{
			name: "open an already fanned out run",
			runFunc: func(t *testing.T, s stores) {
				id := fanned(t)
				_, outcome, err := s.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: id.Job, Nominal: t0, Fence: 1, Now: t0})
				require.NoError(t, err)
				require.Equal(t, ledger.AlreadyFannedOut, outcome)
			},
			emulator: map[string]int{"UpdateItem": 1, "GetItem": 1},
			dynamodb: map[string]int{"UpdateItem": 1},
		},
		{
			name: "forced open",
			runFunc: func(t *testing.T, s stores) {
				id := fanned(t)
				_, outcome, err := s.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: id.Job, Nominal: t0, Fence: 1, Force: true, Now: t0})
				require.NoError(t, err)
				require.Equal(t, ledger.Opened, outcome)
			},
			emulator: map[string]int{"GetItem": 1, "UpdateItem": 1},
			dynamodb: map[string]int{"GetItem": 1, "UpdateItem": 1},
		},
		{
			name: "effect put, stale put, get",
			runFunc: func(t *testing.T, s stores) {
				job := uniqueName(t)
				require.NoError(t, s.effects.Put(ctx, effect.Record{Job: job, Key: "k", Value: []byte("v"), Generation: 2, Attempt: 1, WrittenAt: t0}))
				err := s.effects.Put(ctx, effect.Record{Job: job, Key: "k", Generation: 1, Attempt: 3, WrittenAt: t0})
				require.ErrorIs(t, err, baton.ErrStale)
				require.ErrorContains(t, err, "stored by generation 2 attempt 1")
				got, err := s.effects.Get(ctx, job, "k")
				require.NoError(t, err)
				require.Equal(t, "v", string(got.Value))
			},
			emulator: map[string]int{"PutItem": 2, "GetItem": 2},
			dynamodb: map[string]int{"PutItem": 2, "GetItem": 1},
		},
	} {
		for _, server := range []struct {
			name string
			api  awsdynamodb.API
			want map[string]int
		}{
			{"emulator", c, tc.emulator},
			{"dynamodb", allOld{API: c, table: table}, tc.dynamodb},
		} {
			t.Run(server.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				r := newRecorder(server.api)
				l := awsdynamodb.NewLedgerStore(r, table, nil)
				tc.runFunc(t, stores{
					leases:  awsdynamodb.NewLeaseStore(r, table, nil),
					ledger:  l,
					effects: awsdynamodb.NewEffectStore(r, table, nil),
					seen: func(t *testing.T, run ledger.RunID) {
						_, err := l.GetRun(ctx, run.Job, run.Nominal)
						require.NoError(t, err)
						r.reset()
					},
				})
				require.Equal(t, server.want, r.Counts())
			})
		}
	}
}
