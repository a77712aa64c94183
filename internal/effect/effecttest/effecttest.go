// Package effecttest is the conformance suite of effect.Store. Every
// adapter runs it from one test:
//
//	func TestEffectStore(t *testing.T) {
//		effecttest.Run(t, effecttest.Harness{NewStoreFunc: func(t *testing.T) effect.Store { return newStore(t) }})
//	}
//
// Each case is also exported (TestPutGet, TestFencing, …), so that one
// can be run alone: effecttest.TestFencing(t, h).
//
// Every case starts with t.Parallel() and works on job names no other
// case, and no other process running the suite, uses: NewStoreFunc may hand
// every case a fresh store or one shared backend (one table, one file).
// WrittenAt times are UTC at millisecond precision and must come back
// exactly.
//
// MemStore, the in-memory reference implementation, passes the suite;
// the package's own tests also run the suite against stores broken on
// purpose and require it to fail, so that a passing suite means
// something.
package effecttest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/effect"
)

// Harness is what the suite needs of an adapter.
type Harness struct {
	// NewStoreFunc returns the store a case runs against. It is called once
	// per case; cleanup belongs in t.Cleanup. Cases never share job
	// names, so the store may be fresh or shared.
	NewStoreFunc func(t *testing.T) effect.Store
}

// Case is one conformance case.
type Case struct {
	Name string
	Func func(t *testing.T, h Harness)
}

// Cases lists every case, in the order Run runs them.
func Cases() []Case {
	return []Case{
		{"PutGet", TestPutGet},
		{"Keys", TestKeys},
		{"NotFound", TestNotFound},
		{"Fencing", TestFencing},
		{"Sequence", TestSequence},
		{"JobsScoped", TestJobsScoped},
		{"ConcurrentWriters", TestConcurrentWriters},
		{"Invalid", TestInvalid},
	}
}

// Run runs every case against the stores h makes.
func Run(t *testing.T, h Harness) {
	t.Helper()
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) { c.Func(t, h) })
	}
}

var (
	jobPrefix = func() string {
		var b [4]byte
		_, _ = rand.Read(b[:])
		return "et" + hex.EncodeToString(b[:])
	}()
	jobSeq atomic.Int64
)

// uniqueJob returns a job name no other case, and no other process
// running the suite, uses.
func uniqueJob() string {
	return fmt.Sprintf("%s-%d", jobPrefix, jobSeq.Add(1))
}

// base is the time the cases' WrittenAt values derive from.
var base = time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)

// rec returns the record (job, key) written by (gen, attempt) with value,
// its WrittenAt derived from the pair, at millisecond precision.
func rec(job, key string, gen, attempt int, value []byte) effect.Record {
	return effect.Record{
		Job:        job,
		Key:        key,
		Value:      value,
		Generation: gen,
		Attempt:    attempt,
		WrittenAt:  base.Add(time.Duration(gen)*time.Minute + time.Duration(attempt)*time.Second + 7*time.Millisecond),
	}
}

// requireRecord fails unless got is want as stored and read back. An
// empty value may come back nil or empty.
func requireRecord(t require.TestingT, want, got effect.Record, msgAndArgs ...any) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	require.Equal(t, want.Job, got.Job, msgAndArgs...)
	require.Equal(t, want.Key, got.Key, msgAndArgs...)
	if !bytes.Equal(want.Value, got.Value) {
		require.Failf(t, "value differs", "want %d bytes %s, got %d bytes %s", len(want.Value), preview(want.Value), len(got.Value), preview(got.Value))
	}
	require.Equal(t, [2]int{want.Generation, want.Attempt}, [2]int{got.Generation, got.Attempt}, "(generation, attempt)")
	require.True(t, want.WrittenAt.Equal(got.WrittenAt), "written at: want %s, got %s", want.WrittenAt, got.WrittenAt)
	require.Equal(t, time.UTC, got.WrittenAt.Location(), "written at is UTC")
}

// preview is the start of v, for failure messages.
func preview(v []byte) string {
	if len(v) > 32 {
		return fmt.Sprintf("%q…", v[:32])
	}
	return fmt.Sprintf("%q", v)
}

// put requires r's Put to succeed.
func put(t *testing.T, s effect.Store, r effect.Record) {
	t.Helper()
	require.NoError(t, s.Put(t.Context(), r), "put %s %q at (%d, %d)", r.Job, r.Key, r.Generation, r.Attempt)
}

// get requires (job, key) to be stored and returns it.
func get(t *testing.T, s effect.Store, job, key string) effect.Record {
	t.Helper()
	r, err := s.Get(t.Context(), job, key)
	require.NoError(t, err, "get %s %q", job, key)
	return r
}
