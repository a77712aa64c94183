package awsdynamodb_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/effect"
)

// The record layout infra/dynamodb-table.md documents.
func TestEffectRecord(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	job := uniqueName(t)
	r := effect.Record{Job: job, Key: "EURUSD/2026-11-21T12:00:00Z#1", Value: []byte{0, 1, 0xff}, Generation: 3, Attempt: 2, WrittenAt: t0.Add(time.Second)}
	require.NoError(t, b.effects.Put(ctx, r))
	require.Equal(t, map[string]int{"PutItem": 1}, b.rec.Counts())

	rec := b.raw(t, "EFFECT#"+job+"#EURUSD/2026-11-21T12:00:00Z#1", "EFFECT")
	require.NotNil(t, rec)
	require.Equal(t, []byte{0, 1, 0xff}, rec["value"].(*types.AttributeValueMemberB).Value)
	require.Equal(t, "3", attrN(rec, "gen"))
	require.Equal(t, "2", attrN(rec, "attempt"))
	require.Equal(t, "1795262401000000000", attrN(rec, "written_at"))
	require.NotEmpty(t, attrS(rec, "tok"))
	require.NotContains(t, rec, "ttl")
	require.Len(t, rec, 7, "pk, sk, value, gen, attempt, written_at, tok")

	got, err := b.effects.Get(ctx, job, r.Key)
	require.NoError(t, err)
	require.Equal(t, r, got)

	// An empty value has no value attribute, and reads back empty.
	r.Key, r.Value = "empty", []byte{}
	require.NoError(t, b.effects.Put(ctx, r))
	rec = b.raw(t, "EFFECT#"+job+"#empty", "EFFECT")
	require.NotContains(t, rec, "value")
	got, err = b.effects.Get(ctx, job, "empty")
	require.NoError(t, err)
	require.Empty(t, got.Value)

	_, err = b.effects.Get(ctx, job, "other")
	require.ErrorIs(t, err, baton.ErrNotFound)
}

// Invalid input is refused before any call.
func TestEffectInvalid(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	for _, r := range []effect.Record{
		{Job: "", Key: "k", Generation: 1, Attempt: 1},
		{Job: "fx#1", Key: "k", Generation: 1, Attempt: 1},
		{Job: "fx", Key: "", Generation: 1, Attempt: 1},
		{Job: "fx", Key: strings.Repeat("k", effect.MaxKeyBytes+1), Generation: 1, Attempt: 1},
		{Job: "fx", Key: "a\x00b", Generation: 1, Attempt: 1},
		{Job: "fx", Key: "k", Value: make([]byte, effect.MaxValueBytes+1), Generation: 1, Attempt: 1},
		{Job: "fx", Key: "k", Generation: 0, Attempt: 1},
	} {
		require.ErrorIs(t, b.effects.Put(ctx, r), effect.ErrInvalid)
		if effect.ValidateKey(r.Job, r.Key) != nil {
			_, err := b.effects.Get(ctx, r.Job, r.Key)
			require.ErrorIs(t, err, effect.ErrInvalid)
		}
	}
	require.Empty(t, b.rec.Counts())
}

// A write whose response was lost is settled by reading the record back.
func TestEffectLostResponse(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	job := uniqueName(t)
	b.rec.LoseFunc = func(op string) bool { return op == "PutItem" }
	require.NoError(t, b.effects.Put(ctx, effect.Record{Job: job, Key: "k", Value: []byte("1"), Generation: 2, Attempt: 1, WrittenAt: t0}))
	require.Equal(t, map[string]int{"PutItem": 1, "GetItem": 1}, b.rec.Counts())
	// Lost, and refused: the error says it did not apply, not that it is stale.
	err := b.effects.Put(ctx, effect.Record{Job: job, Key: "k", Value: []byte("2"), Generation: 1, Attempt: 1, WrittenAt: t0})
	require.ErrorContains(t, err, "not applied")
	require.NotErrorIs(t, err, baton.ErrStale)
	b.rec.LoseFunc = nil
	got, err := b.effects.Get(ctx, job, "k")
	require.NoError(t, err)
	require.Equal(t, "1", string(got.Value))
}

// A resent write (the first response lost, the SDK's retry) is the same
// (generation, attempt) writing again: it applies.
func TestEffectResent(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	job := uniqueName(t)
	b.rec.DupFunc = func(op string) bool { return op == "PutItem" }
	require.NoError(t, b.effects.Put(ctx, effect.Record{Job: job, Key: "k", Value: []byte("1"), Generation: 1, Attempt: 1, WrittenAt: t0}))
	b.rec.DupFunc = nil
	got, err := b.effects.Get(ctx, job, "k")
	require.NoError(t, err)
	require.Equal(t, "1", string(got.Value))
}
