package baton

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// MaxRetryDelay is the longest delay before a retry: SQS's longest
// message visibility, 12 hours. A longer one is clamped to it.
const MaxRetryDelay = 12 * time.Hour

// MinRetryAfter is the shortest delay RetryAfter asks for: a shorter,
// zero or negative one is raised to it (and the consumer logs that it
// was), so that a processor answering a 429 with "Retry-After: 0" does
// not retry in a tight loop.
const MinRetryAfter = time.Second

// RetryPolicy says how long a failed item waits before its next attempt:
// exponential backoff with full jitter. The delay before attempt n+1 is
// drawn uniformly from [MinDelay, min(MaxDelay, MinDelay·2^(n-1))], so
// the first retry waits MinDelay and each later one up to twice as long
// as the one before, spread so that items failing together do not retry
// together. A processor's RetryAfter error names its own delay instead.
// Attempts still count against Limits.MaxAttempts, and a Permanent error
// still ends the item at once.
//
// The zero RetryPolicy keeps the engine's own redelivery: the queue's
// visibility timeout on SQS, the local runtime's retry delay (a second by
// default) on the embedded store and PostgreSQL.
type RetryPolicy struct {
	// MinDelay is the first retry's delay (and the least of any).
	MinDelay time.Duration
	// MaxDelay caps every delay; 0 means MaxRetryDelay.
	MaxDelay time.Duration
}

// IsZero reports whether p is the zero policy (the engine's redelivery).
func (p RetryPolicy) IsZero() bool { return p == RetryPolicy{} }

// Delay is the delay before the attempt after attempt (1, 2, …), drawn
// with full jitter; 0 for the zero policy.
func (p RetryPolicy) Delay(attempt int) time.Duration {
	if p.IsZero() {
		return 0
	}
	lo, hi := p.MinDelay, p.maxDelay()
	ceil := lo
	for i := 1; i < attempt && ceil < hi; i++ {
		ceil *= 2
	}
	ceil = min(ceil, hi)
	if ceil <= lo {
		return lo
	}
	return lo + rand.N(ceil-lo+1)
}

func (p RetryPolicy) maxDelay() time.Duration {
	if p.MaxDelay == 0 {
		return MaxRetryDelay
	}
	return p.MaxDelay
}

// validate reports what is wrong with p, for a message naming where it
// is set.
func (p RetryPolicy) validate() error {
	switch {
	case p.IsZero():
		return nil
	case p.MinDelay <= 0:
		return fmt.Errorf("MinDelay %s: must be positive", p.MinDelay)
	case p.MaxDelay < 0:
		return fmt.Errorf("MaxDelay %s: must not be negative", p.MaxDelay)
	case p.MaxDelay > MaxRetryDelay || p.MinDelay > MaxRetryDelay:
		return fmt.Errorf("delays must be at most %s (SQS's longest visibility), got MinDelay %s, MaxDelay %s", MaxRetryDelay, p.MinDelay, p.MaxDelay)
	case p.MinDelay > p.maxDelay():
		return fmt.Errorf("MinDelay %s is above MaxDelay %s", p.MinDelay, p.MaxDelay)
	}
	return nil
}

type retryAfterError struct {
	after time.Duration
	err   error
}

func (e retryAfterError) Error() string { return e.err.Error() }
func (e retryAfterError) Unwrap() error { return e.err }

// RetryAfter marks err as worth retrying after d, in place of the job's
// RetryPolicy: what a processor returns for an HTTP 429 or 503 with a
// Retry-After header. The item's next attempt is not delivered before d
// has passed. A d under MinRetryAfter or over MaxRetryDelay is clamped
// (and the consumer logs it); Permanent wins over RetryAfter. The attempt
// counts against Limits.MaxAttempts. RetryAfter(d, nil) is nil.
func RetryAfter(d time.Duration, err error) error {
	if err == nil {
		return nil
	}
	return retryAfterError{after: d, err: err}
}

// RetryAfterOf returns the delay err (or an error it wraps) asks for with
// RetryAfter, as given (unclamped).
func RetryAfterOf(err error) (time.Duration, bool) {
	var r retryAfterError
	if errors.As(err, &r) {
		return r.after, true
	}
	return 0, false
}
