package effect_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/effect/effecttest"
)

var t0 = time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)

func TestBind(t *testing.T) {
	t.Parallel()
	s := effecttest.NewMemStore()
	ctx := t.Context()
	zone := time.FixedZone("UTC-3", -3*3600)
	now := t0.Add(1500 * time.Millisecond).In(zone)
	fx := effect.Bind(s, "fx", 2, 3, func() time.Time { return now })

	require.NoError(t, fx.Put(ctx, "EURUSD/2026-11-21T12:00:00Z", []byte("1.0833")))
	stored, err := s.Get(ctx, "fx", "EURUSD/2026-11-21T12:00:00Z")
	require.NoError(t, err)
	require.Equal(t, effect.Record{
		Job: "fx", Key: "EURUSD/2026-11-21T12:00:00Z", Value: []byte("1.0833"),
		Generation: 2, Attempt: 3, WrittenAt: now.UTC(),
	}, stored, "Put fills the job, the pair and the time, in UTC")

	got, err := fx.Get(ctx, "EURUSD/2026-11-21T12:00:00Z")
	require.NoError(t, err)
	require.Equal(t, baton.Effect{
		Key: "EURUSD/2026-11-21T12:00:00Z", Value: []byte("1.0833"),
		Generation: 2, Attempt: 3, WrittenAt: now.UTC(),
	}, got)

	_, err = fx.Get(ctx, "other")
	require.ErrorIs(t, err, baton.ErrNotFound)
	_, err = effect.Bind(s, "other", 2, 3, nil).Get(ctx, "EURUSD/2026-11-21T12:00:00Z")
	require.ErrorIs(t, err, baton.ErrNotFound, "another job's view")
}

// Views of a key's successive attempts and generations fence each other.
func TestBindFences(t *testing.T) {
	t.Parallel()
	s := effecttest.NewMemStore()
	ctx := t.Context()
	view := func(gen, attempt int) baton.Effects { return effect.Bind(s, "fx", gen, attempt, nil) }

	require.NoError(t, view(1, 2).Put(ctx, "k", []byte("attempt 2")))
	require.NoError(t, view(1, 2).Put(ctx, "k", []byte("attempt 2 again")), "a task may repeat its write")
	err := view(1, 1).Put(ctx, "k", []byte("stale"))
	require.ErrorIs(t, err, baton.ErrStale)
	require.ErrorContains(t, err, `fx "k"`)
	require.NoError(t, view(2, 1).Put(ctx, "k", []byte("replay")))
	require.ErrorIs(t, view(1, 3).Put(ctx, "k", []byte("stale")), baton.ErrStale)

	got, err := view(1, 1).Get(ctx, "k")
	require.NoError(t, err, "any view reads the job's records")
	require.Equal(t, "replay", string(got.Value))
	require.Equal(t, [2]int{2, 1}, [2]int{got.Generation, got.Attempt})
}

func TestBindInvalid(t *testing.T) {
	t.Parallel()
	s := effecttest.NewMemStore()
	ctx := t.Context()
	require.ErrorIs(t, effect.Bind(s, "f x", 1, 1, nil).Put(ctx, "k", nil), effect.ErrInvalid)
	require.ErrorIs(t, effect.Bind(s, "fx", 1, 0, nil).Put(ctx, "k", nil), effect.ErrInvalid)
	require.ErrorIs(t, effect.Bind(s, "fx", 1, 1, nil).Put(ctx, "", nil), effect.ErrInvalid)
	_, err := effect.Bind(s, "fx", 1, 1, nil).Get(ctx, "")
	require.ErrorIs(t, err, effect.ErrInvalid)
}

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := effect.Record{Job: "fx", Key: "k", Generation: 1, Attempt: 1}
	require.NoError(t, effect.Validate(ok))
	for _, c := range []struct {
		r    effect.Record
		want string
	}{
		{effect.Record{Job: "", Key: "k", Generation: 1, Attempt: 1}, `invalid effect: invalid job name ""`},
		{effect.Record{Job: "fx", Key: "", Generation: 1, Attempt: 1}, "invalid effect: empty key"},
		{effect.Record{Job: "fx", Key: strings.Repeat("k", 513), Generation: 1, Attempt: 1}, "key of 513 bytes, above the limit of 512 bytes"},
		{effect.Record{Job: "fx", Key: "\xff", Generation: 1, Attempt: 1}, `key "\xff" is not valid UTF-8`},
		{effect.Record{Job: "fx", Key: "a\x00", Generation: 1, Attempt: 1}, `key "a\x00" contains a NUL byte`},
		{effect.Record{Job: "fx", Key: "k", Value: make([]byte, 256<<10+1), Generation: 1, Attempt: 1}, `value of 262145 bytes for key "k", above the limit of 262144 bytes`},
		{effect.Record{Job: "fx", Key: "k", Generation: 0, Attempt: 1}, `generation 0 for key "k", want at least 1`},
		{effect.Record{Job: "fx", Key: "k", Generation: 1, Attempt: -2}, `attempt -2 for key "k", want at least 1`},
	} {
		err := effect.Validate(c.r)
		require.ErrorIs(t, err, effect.ErrInvalid, c.want)
		require.ErrorContains(t, err, c.want)
	}
	require.NoError(t, effect.Validate(effect.Record{Job: "fx", Key: strings.Repeat("é", 256), Value: make([]byte, 256<<10), Generation: 1, Attempt: 1}), "the limits are inclusive")
}

func TestReplaces(t *testing.T) {
	t.Parallel()
	at := func(gen, attempt int) effect.Record { return effect.Record{Generation: gen, Attempt: attempt} }
	require.True(t, at(2, 3).Replaces(at(2, 3)))
	require.True(t, at(2, 4).Replaces(at(2, 3)))
	require.True(t, at(3, 1).Replaces(at(2, 3)))
	require.False(t, at(2, 2).Replaces(at(2, 3)))
	require.False(t, at(1, 9).Replaces(at(2, 3)))
}

func TestErrors(t *testing.T) {
	t.Parallel()
	err := effect.StaleError(effect.Record{Job: "fx", Key: "k", Generation: 1, Attempt: 2}, 1, 3)
	require.ErrorIs(t, err, baton.ErrStale)
	require.EqualError(t, err, `put effect fx "k": stored by generation 1 attempt 3, after this write's generation 1 attempt 2: `+baton.ErrStale.Error())
	err = effect.NotFoundError("fx", "k")
	require.ErrorIs(t, err, baton.ErrNotFound)
	require.EqualError(t, err, `get effect fx "k": not found`)
}
