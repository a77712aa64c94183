package baton

import (
	"errors"
	"fmt"
	"time"
)

// MaxRetryDelay is the longest delay before a retry (SQS's longest).
const MaxRetryDelay = 12 * time.Hour

// MinRetryAfter is the shortest delay RetryAfter asks for.
const MinRetryAfter = time.Second

// RetryPolicy is exponential backoff with full jitter from MinDelay.
type RetryPolicy struct {
	MinDelay time.Duration // the first retry's delay, and the least of any
	MaxDelay time.Duration // caps every delay; 0 means MaxRetryDelay
}

// IsZero reports whether p is the zero policy.
func (p RetryPolicy) IsZero() bool { return p == RetryPolicy{} }

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

// RetryAfter marks err to be retried after d, as for an HTTP 429.
func RetryAfter(d time.Duration, err error) error {
	if err == nil {
		return nil
	}
	return retryAfterError{after: d, err: err}
}

// RetryAfterOf returns the delay err asks for with RetryAfter.
func RetryAfterOf(err error) (time.Duration, bool) {
	var r retryAfterError
	if errors.As(err, &r) {
		return r.after, true
	}
	return 0, false
}
