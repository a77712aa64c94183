package sqlstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ratelimit"
)

// fakeEffects is an EffectDB that answers as told and records what it
// was asked to write.
type fakeEffects struct {
	w        EffectWrite
	err      error
	value    []byte
	upserts  int
	found    bool
	readVals []any
}

func (f *fakeEffects) UpsertEffect(_ context.Context, _ effect.Record, value []byte) (EffectWrite, error) {
	f.upserts++
	f.value = value
	return f.w, f.err
}

func (f *fakeEffects) ReadEffect(context.Context, string, string) ReadFunc {
	return func(dest ...any) (bool, error) {
		if !f.found || f.err != nil {
			return false, f.err
		}
		return true, scanOf(f.readVals...)(dest...)
	}
}

func TestEffectStorePut(t *testing.T) {
	t.Parallel()
	r := effect.Record{Job: "j", Key: "k", Generation: 2, Attempt: 1, WrittenAt: t0}
	db := &fakeEffects{w: EffectWrite{Applied: true}}
	s := &EffectStore{DB: db}
	require.NoError(t, s.Put(t.Context(), r))
	require.NotNil(t, db.value, "an empty value is stored empty, not NULL")
	require.Empty(t, db.value)

	db.w = EffectWrite{Generation: 3, Attempt: 1}
	err := s.Put(t.Context(), r)
	require.ErrorIs(t, err, baton.ErrStale)
	require.ErrorContains(t, err, "generation 3 attempt 1")

	db.w, db.err = EffectWrite{}, errors.New("boom")
	require.ErrorContains(t, s.Put(t.Context(), r), `put effect j "k": boom`)

	db.upserts = 0
	require.ErrorIs(t, s.Put(t.Context(), effect.Record{Key: "k"}), effect.ErrInvalid)
	require.Zero(t, db.upserts, "an invalid record is not written")
}

func TestEffectStoreGet(t *testing.T) {
	t.Parallel()
	require.Equal(t, 4, columns(EffectColumns))
	db := &fakeEffects{found: true, readVals: []any{[]byte("v"), 2, 1, Nanos(t0)}}
	s := &EffectStore{DB: db}
	r, err := s.Get(t.Context(), "j", "k")
	require.NoError(t, err)
	require.Equal(t, effect.Record{Job: "j", Key: "k", Value: []byte("v"), Generation: 2, Attempt: 1, WrittenAt: t0}, r)

	db.found = false
	_, err = s.Get(t.Context(), "j", "k")
	require.ErrorIs(t, err, baton.ErrNotFound)

	_, err = s.Get(t.Context(), "", "k")
	require.ErrorIs(t, err, effect.ErrInvalid)
}

// fakeRates is a RateLimitDB that answers as told and counts its calls.
type fakeRates struct {
	take    RateTake
	applied bool
	err     error
	calls   int
	bounds  []int64 // DeleteRunOut's
	rows    [][]any // ReadUsage's
	at      int64   // ReadUsage's UsageAt
}

func (f *fakeRates) TakeUnit(context.Context, ratelimit.TakeParams) (RateTake, error) {
	f.calls++
	return f.take, f.err
}

func (f *fakeRates) HoldSlot(context.Context, ratelimit.SlotParams) (bool, error) {
	f.calls++
	return f.applied, f.err
}

func (f *fakeRates) FreeSlot(context.Context, ratelimit.SlotParams) (bool, error) {
	f.calls++
	return f.applied, f.err
}

func (f *fakeRates) DeleteRunOut(_ context.Context, expired, idle int64) (int, error) {
	f.bounds = []int64{expired, idle}
	return 4, f.err
}

func (f *fakeRates) ReadUsage(_ context.Context, p ratelimit.ListParams, row func(ScanFunc) error) error {
	f.at = UsageAt(p)
	for _, r := range f.rows {
		if err := row(scanOf(r...)); err != nil {
			return err
		}
	}
	return f.err
}

func TestRateLimitStorePruneAndUsage(t *testing.T) {
	t.Parallel()
	db := &fakeRates{}
	s := &RateLimitStore{DB: db}
	n, err := s.PruneLimits(t.Context(), t0)
	require.NoError(t, err)
	require.Equal(t, 4, n)
	require.Equal(t, []int64{Nanos(t0), Nanos(t0.Add(-ratelimit.SlotIdle))}, db.bounds)

	// A rate limit: one row per record name with its window's count.
	db.rows = [][]any{{"api#a", int64(3), "", int64(0)}, {"api#b", int64(1), "", int64(0)}}
	p := ratelimit.ListParams{Limit: ratelimit.Limit{Name: "api", Starts: 5, Per: time.Minute}, Keyed: true, Now: t0}
	us, err := s.ListUsage(t.Context(), p)
	require.NoError(t, err)
	require.Equal(t, p.Limit.Window(t0), db.at)
	require.Equal(t, []ratelimit.Usage{{Key: "a", Starts: 3}, {Key: "b", Starts: 1}}, us)

	// Slots: one row per held slot.
	db.rows = [][]any{{"pool", int64(0), "h1", Nanos(t0.Add(time.Minute))}, {"pool", int64(2), "h2", Nanos(t0.Add(time.Hour))}}
	p = ratelimit.ListParams{Limit: ratelimit.Limit{Name: "pool", InFlight: 3}, Now: t0}
	us, err = s.ListUsage(t.Context(), p)
	require.NoError(t, err)
	require.Equal(t, Nanos(t0), db.at)
	require.Equal(t, []ratelimit.Usage{{Holds: []ratelimit.Hold{{Slot: 0, Holder: "h1", Until: t0.Add(time.Minute)}, {Slot: 2, Holder: "h2", Until: t0.Add(time.Hour)}}}}, us)

	db.err = errors.New("boom")
	_, err = s.ListUsage(t.Context(), p)
	require.ErrorContains(t, err, "rate limit pool: list usage: boom")
	_, err = s.PruneLimits(t.Context(), t0)
	require.ErrorContains(t, err, "prune rate limits: boom")
}

func TestRateLimits(t *testing.T) {
	t.Parallel()
	db := &fakeRates{take: RateTake{Count: 2}, applied: true}
	s := &RateLimitStore{DB: db}
	tp := ratelimit.TakeParams{Name: "n", Max: 3, Window: 1}
	n, err := s.Take(t.Context(), tp)
	require.NoError(t, err)
	require.Equal(t, 2, n)

	db.take = RateTake{Count: 3, Full: true}
	n, err = s.Take(t.Context(), tp)
	require.ErrorIs(t, err, ratelimit.ErrFull)
	require.Equal(t, 3, n, "a refused take reports the count")

	sp := ratelimit.SlotParams{Name: "n", Slot: 1, Holder: "h", Until: t0.Add(time.Minute), Now: t0}
	require.NoError(t, s.Hold(t.Context(), sp))
	require.NoError(t, s.Free(t.Context(), sp))
	db.applied = false
	require.ErrorIs(t, s.Hold(t.Context(), sp), ratelimit.ErrFull)
	require.ErrorIs(t, s.Free(t.Context(), sp), ratelimit.ErrNotHolder)
	db.err = errors.New("boom")
	require.ErrorContains(t, s.Hold(t.Context(), sp), "rate limit n slot 1: hold: boom")
	_, err = s.Take(t.Context(), tp)
	require.ErrorContains(t, err, "rate limit n window 1 shard 0: boom")

	db.calls = 0
	for _, bad := range []ratelimit.TakeParams{{Max: 1}, {Name: "n"}, {Name: "n", Max: 1, Window: -1}, {Name: "n", Max: 1, Shard: -1}} {
		_, err := s.Take(t.Context(), bad)
		require.ErrorContains(t, err, "required", "%+v", bad)
	}
	for _, bad := range []ratelimit.SlotParams{{Slot: 1, Holder: "h"}, {Name: "n", Holder: "h", Slot: -1}, {Name: "n"}} {
		require.ErrorContains(t, s.Hold(t.Context(), bad), "required", "%+v", bad)
		require.ErrorContains(t, s.Free(t.Context(), bad), "required", "%+v", bad)
	}
	require.Zero(t, db.calls, "invalid parameters reach no statement")
}

// fakePauses is a PauseDB on one in-memory record per job.
type fakePauses struct {
	recs map[string][]any // PauseColumns' values
	err  error
}

func (f *fakePauses) WritePause(_ context.Context, p lease.SetPauseParams) error {
	if f.err != nil {
		return f.err
	}
	if p.Paused {
		f.recs[p.Job] = []any{true, Nanos(p.Now), int64(0), p.By, p.Reason, int64(0), int64(0)}
	} else if r, ok := f.recs[p.Job]; ok {
		f.recs[p.Job] = []any{false, r[1], Nanos(p.Now), p.By, p.Reason, r[5], r[6]}
	}
	return nil
}

func (f *fakePauses) CountSkipped(_ context.Context, job string, nominal time.Time) error {
	if r, ok := f.recs[job]; ok && r[0].(bool) {
		r[5], r[6] = r[5].(int64)+1, Nanos(nominal)
	}
	return f.err
}

func (f *fakePauses) ReadPause(_ context.Context, job string) ReadFunc {
	return func(dest ...any) (bool, error) {
		r, ok := f.recs[job]
		if !ok || f.err != nil {
			return false, f.err
		}
		return true, scanOf(r...)(dest...)
	}
}

func TestPauses(t *testing.T) {
	t.Parallel()
	require.Equal(t, 7, columns(PauseColumns))
	db := &fakePauses{recs: map[string][]any{}}
	s := Pauses{DB: db}
	p, err := s.PauseOf(t.Context(), "j")
	require.NoError(t, err)
	require.Equal(t, lease.Pause{Job: "j"}, p, "a job without a record is not paused")

	_, err = s.RecordSkipped(t.Context(), "j", t0)
	require.ErrorIs(t, err, lease.ErrNotPaused)

	p, err = s.SetPause(t.Context(), lease.SetPauseParams{Job: "j", Paused: true, By: "ops", Reason: "r", Now: t0})
	require.NoError(t, err)
	require.Equal(t, lease.Pause{Job: "j", Paused: true, Since: t0, By: "ops", Reason: "r"}, p)
	p, err = s.RecordSkipped(t.Context(), "j", t0.Add(time.Minute))
	require.NoError(t, err)
	require.EqualValues(t, 1, p.Skipped)
	require.Equal(t, t0.Add(time.Minute), p.LastSkipped)

	_, err = s.SetPause(t.Context(), lease.SetPauseParams{Paused: true})
	require.ErrorContains(t, err, "empty job")
	_, err = s.RecordSkipped(t.Context(), "", t0)
	require.ErrorContains(t, err, "empty job")
	db.err = errors.New("boom")
	_, err = s.PauseOf(t.Context(), "j")
	require.ErrorContains(t, err, `pause of "j": boom`)
}
