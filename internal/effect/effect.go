// Package effect is the port for a job's fenced effect store: the values a
// processor writes as the side effects of its items (baton.Effects), kept
// on the same backend as the ledger.
//
// A record is addressed by (job, key) and carries the (generation,
// attempt) of the task that wrote it. A write is fenced by that pair: it
// is applied when no record exists for (job, key), or when the stored
// pair is at most the write's, compared generation first; otherwise it
// is refused with an error matching baton.ErrStale and writes nothing.
// So
//
//   - the same (generation, attempt) may write again and replaces its own
//     value (a processor retrying its write, a redelivered message);
//   - a later attempt of the item replaces an earlier attempt's value;
//   - a later generation (a forced replay) replaces the earlier
//     generation's value whatever its attempt;
//   - a stale worker (an earlier attempt whose claim expired and was taken
//     over, or a worker of an earlier generation) never overwrites a newer
//     one's value, however the writes race.
//
// Generations and attempts never decrease for an item (the ledger mints
// them), which is what makes the pair a fence. Records are never deleted;
// keys are scoped to a job, so jobs never fence each other.
//
// Each Put is one conditional write on one record, so every backend with
// conditional writes can implement it: a compare-and-set row in SQLite, a
// conditioned PutItem in DynamoDB. Records are checked against the
// package's limits by Validate and ValidateKey, which every adapter calls
// before touching its backend, so the limits are the same on every
// backend.
//
// Bind turns a Store into the baton.Effects a processor gets for one task
// (baton.Task.Effects).
//
// Implementations must pass the conformance suite in
// internal/effect/effecttest.
package effect

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton"
)

// Limits of a record, checked by Validate on every backend.
const (
	// MaxKeyBytes bounds a key's length in bytes (UTF-8).
	MaxKeyBytes = 512
	// MaxValueBytes bounds a value's length in bytes.
	MaxValueBytes = 256 << 10
)

// ErrInvalid: a record or an address is outside the limits (a bad job
// name, an empty, too long or malformed key, a too large value, a
// generation or attempt below 1). Nothing was read or written.
var ErrInvalid = errors.New("invalid effect")

// Record is one stored effect.
type Record struct {
	// Job scopes the key: a valid job name (baton.ValidName).
	Job string
	// Key is any UTF-8 text of 1 to MaxKeyBytes bytes without NUL.
	Key string
	// Value is at most MaxValueBytes; it may be empty. An empty value
	// reads back empty (nil or not).
	Value []byte
	// Generation and Attempt are of the task that wrote the record; both
	// are at least 1. Together they fence the record's writes.
	Generation int
	Attempt    int
	// WrittenAt is the writer's clock at the write. Backends keep it to
	// the nanosecond and return it in UTC.
	WrittenAt time.Time
}

// Replaces reports whether a write of r is applied over a stored record
// written by (stored.Generation, stored.Attempt): whether r's pair is at
// least the stored one, compared generation first.
func (r Record) Replaces(stored Record) bool {
	return r.Generation > stored.Generation ||
		r.Generation == stored.Generation && r.Attempt >= stored.Attempt
}

// Store holds the effects of every job. Methods may be called
// concurrently, from any number of processes sharing the backend.
type Store interface {
	// Put writes r in ONE conditional write. It is applied when no record
	// exists for (r.Job, r.Key), or when the stored (Generation, Attempt)
	// is at most r's, compared generation first (Record.Replaces); the
	// stored record then becomes r. Otherwise Put writes nothing and
	// returns an error matching baton.ErrStale that names the job and key
	// and the stored and the given generation and attempt (StaleError).
	// A record outside the limits (Validate) is refused with an error
	// matching ErrInvalid before anything is read or written. Put does
	// not retain r.Value. Once Put returned nil, every Get sees r or a
	// record that replaced it.
	Put(ctx context.Context, r Record) error
	// Get returns the record stored for (job, key), with its value owned
	// by the caller, or an error matching baton.ErrNotFound when there is
	// none. An address outside the limits (ValidateKey) is refused with an
	// error matching ErrInvalid.
	Get(ctx context.Context, job, key string) (Record, error)
}

// ValidateKey returns an error matching ErrInvalid, naming what is wrong,
// unless job is a valid job name and key a valid key: 1 to MaxKeyBytes
// bytes of valid UTF-8 without NUL.
func ValidateKey(job, key string) error {
	if err := baton.ValidName("job", job); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalid)
	case len(key) > MaxKeyBytes:
		return fmt.Errorf("%w: key of %d bytes, above the limit of %d bytes", ErrInvalid, len(key), MaxKeyBytes)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: key %q is not valid UTF-8", ErrInvalid, key)
	case strings.IndexByte(key, 0) >= 0:
		return fmt.Errorf("%w: key %q contains a NUL byte", ErrInvalid, key)
	}
	return nil
}

// Validate returns an error matching ErrInvalid, naming what is wrong,
// unless r is within the limits: a valid address (ValidateKey), a value
// of at most MaxValueBytes, and a generation and an attempt of at least 1.
// Every adapter calls it before touching its backend.
func Validate(r Record) error {
	if err := ValidateKey(r.Job, r.Key); err != nil {
		return err
	}
	switch {
	case len(r.Value) > MaxValueBytes:
		return fmt.Errorf("%w: value of %d bytes for key %q, above the limit of %d bytes", ErrInvalid, len(r.Value), r.Key, MaxValueBytes)
	case r.Generation < 1:
		return fmt.Errorf("%w: generation %d for key %q, want at least 1", ErrInvalid, r.Generation, r.Key)
	case r.Attempt < 1:
		return fmt.Errorf("%w: attempt %d for key %q, want at least 1", ErrInvalid, r.Attempt, r.Key)
	}
	return nil
}

// StaleError is the error of a Put of r refused because the stored record
// was written by (storedGeneration, storedAttempt), a later pair: it
// matches baton.ErrStale and names the job, the key and both pairs.
func StaleError(r Record, storedGeneration, storedAttempt int) error {
	return fmt.Errorf("put effect %s %q: stored by generation %d attempt %d, after this write's generation %d attempt %d: %w",
		r.Job, r.Key, storedGeneration, storedAttempt, r.Generation, r.Attempt, baton.ErrStale)
}

// NotFoundError is the error of a Get of (job, key) that found no record:
// it matches baton.ErrNotFound and names the job and the key.
func NotFoundError(job, key string) error {
	return fmt.Errorf("get effect %s %q: %w", job, key, baton.ErrNotFound)
}

// Bind returns the view of s a processor gets for one task of job: its
// Put writes a Record of job fenced by (generation, attempt), with
// WrittenAt now().UTC(); its Get reads job's records. now nil means
// time.Now. The view checks nothing itself: s refuses what is invalid
// (an error matching ErrInvalid) or stale (baton.ErrStale).
func Bind(s Store, job string, generation, attempt int, now func() time.Time) baton.Effects {
	if now == nil {
		now = time.Now
	}
	return bound{s: s, job: job, generation: generation, attempt: attempt, nowFunc: now}
}

// bound is the task-bound view Bind returns.
type bound struct {
	s                   Store
	job                 string
	generation, attempt int
	nowFunc             func() time.Time
}

var _ baton.Effects = bound{}

func (b bound) Put(ctx context.Context, key string, value []byte) error {
	return b.s.Put(ctx, Record{
		Job:        b.job,
		Key:        key,
		Value:      value,
		Generation: b.generation,
		Attempt:    b.attempt,
		WrittenAt:  b.nowFunc().UTC(),
	})
}

func (b bound) Get(ctx context.Context, key string) (baton.Effect, error) {
	r, err := b.s.Get(ctx, b.job, key)
	if err != nil {
		return baton.Effect{}, err
	}
	return baton.Effect{
		Key:        r.Key,
		Value:      r.Value,
		Generation: r.Generation,
		Attempt:    r.Attempt,
		WrittenAt:  r.WrittenAt,
	}, nil
}
