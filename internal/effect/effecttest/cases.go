package effecttest

import (
	"crypto/rand"
	"fmt"
	mathrand "math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/effect"
)

// TestPutGet: what Put writes, Get returns, every field, for values of
// every shape up to the limit; the store keeps its own copy of a value.
func TestPutGet(t *testing.T, h Harness) {
	t.Parallel()
	s := h.NewStoreFunc(t)
	job := uniqueJob()

	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	largest := make([]byte, effect.MaxValueBytes)
	_, _ = rand.Read(largest)
	for _, c := range []struct {
		name  string
		value []byte
	}{
		{"text", []byte("1.0842,1.0871,1.0815,1.0833")},
		{"empty", []byte{}},
		{"nil", nil},
		{"binary", binary},
		{"largest", largest},
	} {
		r := rec(job, "value-"+c.name, 2, 3, c.value)
		put(t, s, r)
		requireRecord(t, r, get(t, s, job, r.Key), c.name)
	}

	// WrittenAt in another location comes back as the same instant, in UTC.
	r := rec(job, "zone", 1, 1, []byte("z"))
	r.WrittenAt = r.WrittenAt.In(time.FixedZone("UTC+5", 5*3600))
	put(t, s, r)
	requireRecord(t, r, get(t, s, job, r.Key), "written at in UTC+5")

	// The store keeps its own copy: neither the writer's nor a reader's
	// later changes to their slices reach it.
	value := []byte("kept")
	r = rec(job, "copy", 1, 1, value)
	put(t, s, r)
	value[0] = 'X'
	got := get(t, s, job, r.Key)
	require.Equal(t, "kept", string(got.Value), "the store kept the writer's slice")
	got.Value[0] = 'Y'
	require.Equal(t, "kept", string(get(t, s, job, r.Key).Value), "the store handed out its own slice")
}

// TestKeys: any UTF-8 key of 1 to MaxKeyBytes bytes without NUL is a key
// of its own, compared byte for byte (no case folding, trimming or
// normalization), whatever characters it holds.
func TestKeys(t *testing.T, h Harness) {
	t.Parallel()
	s := h.NewStoreFunc(t)
	job := uniqueJob()
	keys := []string{
		"k",
		"K",
		"k ",
		" k",
		"bars/EURUSD/2026-11-21T12:01:00Z",
		"with # and @ and / and spaces",
		"EFFECT#" + job + "#k",
		"LEASE",
		"%00",
		"ключ €",
		"é",       // U+00E9
		"e\u0301", // e and a combining acute accent: another key
		"tab\tand\nnewline",
		"\U0001D11E",
		strings.Repeat("k", effect.MaxKeyBytes),
		strings.Repeat("é", effect.MaxKeyBytes/2),
		strings.Repeat("a", effect.MaxKeyBytes-4) + "\U0001D11E",
	}
	for i, k := range keys {
		put(t, s, rec(job, k, 1, 1, []byte(strconv.Itoa(i))))
	}
	for i, k := range keys {
		requireRecord(t, rec(job, k, 1, 1, []byte(strconv.Itoa(i))), get(t, s, job, k), "key %q", k)
	}
}

// TestNotFound: Get of a key never written returns an error matching
// baton.ErrNotFound, whether the job, or the key in another job, is known.
func TestNotFound(t *testing.T, h Harness) {
	t.Parallel()
	s := h.NewStoreFunc(t)
	job, other := uniqueJob(), uniqueJob()
	requireNotFound := func(job, key, msg string) {
		t.Helper()
		_, err := s.Get(t.Context(), job, key)
		require.ErrorIs(t, err, baton.ErrNotFound, msg)
		require.NotErrorIs(t, err, baton.ErrStale, msg)
		require.NotErrorIs(t, err, effect.ErrInvalid, msg)
	}
	requireNotFound(job, "k", "unknown job")
	put(t, s, rec(job, "k", 1, 1, []byte("v")))
	requireNotFound(job, "k2", "known job, unknown key")
	requireNotFound(job, "K", "known job, the key in another case")
	requireNotFound(other, "k", "the key of another job")
}

// TestFencing: a write is applied exactly when its (generation, attempt)
// is at least the stored one, compared generation first; a refused one
// returns an error matching baton.ErrStale that names the job, the key and
// both pairs, and changes nothing.
func TestFencing(t *testing.T, h Harness) {
	t.Parallel()
	s := h.NewStoreFunc(t)
	job := uniqueJob()
	const gen, attempt = 7005, 3003 // the stored pair
	for i, c := range []struct {
		name     string
		gen      int
		attempt  int
		accepted bool
	}{
		{"same generation and attempt", gen, attempt, true},
		{"higher attempt", gen, attempt + 1, true},
		{"lower attempt", gen, attempt - 1, false},
		{"higher generation, lower attempt", gen + 1, 1, true},
		{"higher generation, higher attempt", gen + 1, attempt + 1, true},
		{"lower generation, higher attempt", gen - 1, 9999, false},
		{"lower generation, same attempt", gen - 1, attempt, false},
		{"lower generation, lower attempt", gen - 1, 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			key := fmt.Sprintf("fence-%d", i)
			stored := rec(job, key, gen, attempt, []byte("stored"))
			put(t, s, stored)
			next := rec(job, key, c.gen, c.attempt, []byte("next"))
			err := s.Put(t.Context(), next)
			if c.accepted {
				require.NoError(t, err)
				requireRecord(t, next, get(t, s, job, key), "the write replaced the stored record")
				return
			}
			require.ErrorIs(t, err, baton.ErrStale)
			require.NotErrorIs(t, err, baton.ErrNotFound)
			for _, want := range []string{job, key, strconv.Itoa(gen), strconv.Itoa(attempt), strconv.Itoa(c.gen), strconv.Itoa(c.attempt)} {
				require.Contains(t, err.Error(), want, "the error names the job, the key and both pairs")
			}
			requireRecord(t, stored, get(t, s, job, key), "a refused write changes nothing")
		})
	}
}

// TestSequence drives keys through random sequences of writes and
// requires each outcome, and the stored record after it, to be the
// model's: applied when the pair is at least the highest applied so far,
// compared generation first.
func TestSequence(t *testing.T, h Harness) {
	t.Parallel()
	s := h.NewStoreFunc(t)
	job := uniqueJob()
	seed := uint64(time.Now().UnixNano())
	rnd := mathrand.New(mathrand.NewPCG(seed, 1))
	const keys, writes = 8, 12
	for k := range keys {
		key := fmt.Sprintf("seq-%d", k)
		var stored *effect.Record
		for i := range writes {
			r := rec(job, key, 1+rnd.IntN(3), 1+rnd.IntN(3), fmt.Appendf(nil, "write %d", i))
			want := stored == nil || r.Generation > stored.Generation || r.Generation == stored.Generation && r.Attempt >= stored.Attempt
			err := s.Put(t.Context(), r)
			if want {
				require.NoError(t, err, "seed %d, %s write %d at (%d, %d) over %v", seed, key, i, r.Generation, r.Attempt, pairOf(stored))
				stored = &r
			} else {
				require.ErrorIs(t, err, baton.ErrStale, "seed %d, %s write %d at (%d, %d) over %v", seed, key, i, r.Generation, r.Attempt, pairOf(stored))
			}
			requireRecord(t, *stored, get(t, s, job, key), "seed %d, %s after write %d", seed, key, i)
		}
	}
}

func pairOf(r *effect.Record) string {
	if r == nil {
		return "nothing"
	}
	return fmt.Sprintf("(%d, %d)", r.Generation, r.Attempt)
}

// TestJobsScoped: the same key in two jobs names two records, which
// neither fence nor overwrite each other; so do two keys of one job.
func TestJobsScoped(t *testing.T, h Harness) {
	t.Parallel()
	s := h.NewStoreFunc(t)
	a, b := uniqueJob(), uniqueJob()
	highA := rec(a, "k", 9, 9, []byte("a"))
	put(t, s, highA)
	lowB := rec(b, "k", 1, 1, []byte("b"))
	require.NoError(t, s.Put(t.Context(), lowB), "another job's key is not fenced by this one")
	otherKey := rec(a, "k2", 1, 1, []byte("a2"))
	require.NoError(t, s.Put(t.Context(), otherKey), "another key of the job is not fenced by this one")
	require.ErrorIs(t, s.Put(t.Context(), rec(a, "k", 1, 1, []byte("stale"))), baton.ErrStale)
	nextB := rec(b, "k", 2, 1, []byte("b2"))
	put(t, s, nextB)
	requireRecord(t, highA, get(t, s, a, "k"))
	requireRecord(t, nextB, get(t, s, b, "k"))
	requireRecord(t, otherKey, get(t, s, a, "k2"))
}

// TestConcurrentWriters: writers of many (generation, attempt) pairs race
// on one key; whatever the order, the record left is the highest pair's
// ("a stale worker never overwrites a newer one"). Each writer succeeds
// (it came before a higher one) or gets baton.ErrStale; the highest pair
// is never stale, and after the race every lower pair is.
func TestConcurrentWriters(t *testing.T, h Harness) {
	t.Parallel()
	s := h.NewStoreFunc(t)
	job := uniqueJob()
	type pair struct{ gen, attempt int }
	// The highest pair has a lower attempt than others: compared attempt
	// first, (2, 4) would win. The duplicates are redeliveries.
	top := pair{3, 2}
	writers := []pair{{1, 1}, {1, 2}, {1, 3}, {1, 4}, {2, 1}, {2, 2}, {2, 3}, {2, 3}, {2, 4}, {3, 1}, top, top}
	value := func(p pair) []byte { return fmt.Appendf(nil, "g%d-a%d", p.gen, p.attempt) }
	seed := uint64(time.Now().UnixNano())
	rnd := mathrand.New(mathrand.NewPCG(seed, 2))
	const rounds = 8
	for round := range rounds {
		key := fmt.Sprintf("race-%d", round)
		order := append([]pair(nil), writers...)
		rnd.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		start := make(chan struct{})
		errs := make([]error, len(order))
		var wg sync.WaitGroup
		for i, p := range order {
			wg.Go(func() {
				<-start
				errs[i] = s.Put(t.Context(), rec(job, key, p.gen, p.attempt, value(p)))
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			p := order[i]
			if err != nil {
				require.ErrorIs(t, err, baton.ErrStale, "seed %d round %d: writer (%d, %d)", seed, round, p.gen, p.attempt)
			}
			if p == top {
				require.NoError(t, err, "seed %d round %d: the highest writer is never stale", seed, round)
			}
		}
		want := rec(job, key, top.gen, top.attempt, value(top))
		requireRecord(t, want, get(t, s, job, key), "seed %d round %d: the highest writer's record is left", seed, round)
		for _, p := range writers {
			if p != top {
				err := s.Put(t.Context(), rec(job, key, p.gen, p.attempt, []byte("late")))
				require.ErrorIs(t, err, baton.ErrStale, "round %d: a late (%d, %d)", round, p.gen, p.attempt)
			}
		}
		requireRecord(t, want, get(t, s, job, key), "seed %d round %d: late writers changed nothing", seed, round)
	}
}

// TestInvalid: a record outside the limits is refused with an error
// matching effect.ErrInvalid that says what is wrong, and nothing is
// written; so is a Get of an invalid address.
func TestInvalid(t *testing.T, h Harness) {
	t.Parallel()
	s := h.NewStoreFunc(t)
	job := uniqueJob()
	for i, c := range []struct {
		name       string
		changeFunc func(r *effect.Record)
		// mention is in the error; addressOK: (Job, Key) is valid.
		mention   string
		addressOK bool
	}{
		{"empty job", func(r *effect.Record) { r.Job = "" }, "job", false},
		{"job with a space", func(r *effect.Record) { r.Job = "fx 1" }, "job", false},
		{"job with #", func(r *effect.Record) { r.Job = "fx#1" }, "job", false},
		{"job of 65 characters", func(r *effect.Record) { r.Job = strings.Repeat("j", 65) }, "job", false},
		{"empty key", func(r *effect.Record) { r.Key = "" }, "key", false},
		{"key above the limit", func(r *effect.Record) { r.Key = strings.Repeat("k", effect.MaxKeyBytes+1) }, "key", false},
		{"key above the limit in bytes", func(r *effect.Record) { r.Key = strings.Repeat("é", effect.MaxKeyBytes/2) + "k" }, "key", false},
		{"key not UTF-8", func(r *effect.Record) { r.Key = "bad\xffkey" }, "UTF-8", false},
		{"key with NUL", func(r *effect.Record) { r.Key = "a\x00b" }, "NUL", false},
		{"value above the limit", func(r *effect.Record) { r.Value = make([]byte, effect.MaxValueBytes+1) }, "value", true},
		{"generation 0", func(r *effect.Record) { r.Generation = 0 }, "generation", true},
		{"negative generation", func(r *effect.Record) { r.Generation = -1 }, "generation", true},
		{"attempt 0", func(r *effect.Record) { r.Attempt = 0 }, "attempt", true},
		{"negative attempt", func(r *effect.Record) { r.Attempt = -1 }, "attempt", true},
	} {
		key := fmt.Sprintf("invalid-%d", i)
		stored := rec(job, key, 1, 1, []byte("stored"))
		put(t, s, stored)
		r := rec(job, key, 2, 1, []byte("invalid"))
		c.changeFunc(&r)
		err := s.Put(t.Context(), r)
		require.ErrorIs(t, err, effect.ErrInvalid, c.name)
		require.NotErrorIs(t, err, baton.ErrStale, c.name)
		require.Contains(t, err.Error(), c.mention, "%s: the error says what is wrong", c.name)
		if c.addressOK {
			requireRecord(t, stored, get(t, s, job, key), "%s: nothing written", c.name)
			continue
		}
		_, err = s.Get(t.Context(), r.Job, r.Key)
		require.ErrorIs(t, err, effect.ErrInvalid, "%s: get", c.name)
		require.NotErrorIs(t, err, baton.ErrNotFound, "%s: get", c.name)
		requireRecord(t, stored, get(t, s, job, key), "%s: nothing written", c.name)
	}
}
