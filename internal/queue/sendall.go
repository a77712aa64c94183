package queue

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
)

// SendAllOptions tune SendAll. The zero value is usable.
type SendAllOptions struct {
	// Parallel is the number of batches in flight at once; 0 means 4.
	Parallel int
	// Retries is how many times the entries a partial batch refused are
	// sent again; 0 means 3.
	Retries int

	// sleepFunc waits d or until ctx ends (then it returns ctx's error),
	// and randFunc returns a number uniform in [0, n): they stand in for
	// the clock and the jitter in tests. nil means the real ones.
	sleepFunc func(ctx context.Context, d time.Duration) error
	randFunc  func(n int64) int64
}

// The backoff before a retry grows from retryBase, doubling each time, to
// at most retryCap; the wait is uniform between 0 and that bound ("full
// jitter"), so that senders refused together do not come back together.
const (
	retryBase = 50 * time.Millisecond
	retryCap  = time.Second
)

// SendAll sends msgs in batches of at most MaxBatch entries (BatchLimit
// for a Sender with LargeBatches) and MaxBatchBytes, up to Parallel batches at once, retrying only the entries
// that failed. Entry ids are assigned per batch; the ids in msgs are
// ignored. It returns the number of messages sent, in order from the front
// of msgs: on error, msgs[:sent] were all accepted (later ones may have been
// too).
//
// Retries. A Sender's call is already retried where that is worth it:
// the SQS adapter's client retries a call that fails as a whole
// (throttling, 5xx, network errors) with the SDK's standard retryer (by
// default 3 attempts with jittered exponential backoff; awsbackend builds
// the client with sqs.NewFromConfig and leaves the retry settings to the
// configuration chain), and the SQLite adapter writes a batch all or
// nothing, waiting out a busy database. So SendAll never sends again a
// call that failed as a whole, which would multiply those retries: it
// returns that error. It retries only what nothing below it does, the
// entries that a call which succeeded refused (a *BatchError): at most
// Retries times, the n-th after a wait drawn uniformly from
// [0, min(1s, 50ms·2ⁿ⁻¹)), and none once ctx ends.
func SendAll(ctx context.Context, s Sender, msgs []Message, o *SendAllOptions) (sent int, err error) {
	r := retrier{retries: 3, sleep: sleepCtx, rand: rand.Int64N}
	parallel := 4
	if o != nil {
		if o.Parallel > 0 {
			parallel = o.Parallel
		}
		if o.Retries > 0 {
			r.retries = o.Retries
		}
		if o.sleepFunc != nil {
			r.sleep = o.sleepFunc
		}
		if o.randFunc != nil {
			r.rand = o.randFunc
		}
	}
	batches := split(msgs, BatchLimit(s))
	errs := make([]error, len(batches))
	// A failed batch does not stop the others: each one's error is kept,
	// and the first in order decides what was sent.
	var g errgroup.Group
	g.SetLimit(parallel)
	for i, b := range batches {
		if ctx.Err() != nil {
			errs[i] = ctx.Err()
			continue
		}
		g.Go(func() error {
			errs[i] = r.sendBatch(ctx, s, msgs[b.lo:b.hi])
			return nil
		})
	}
	_ = g.Wait()
	for i, b := range batches {
		if errs[i] != nil {
			return b.lo, fmt.Errorf("send messages %d..%d: %w", b.lo, b.hi-1, errs[i])
		}
	}
	return len(msgs), nil
}

type span struct{ lo, hi int }

// split cuts msgs into spans of at most most entries and MaxBatchBytes.
func split(msgs []Message, most int) []span {
	var out []span
	lo, size := 0, 0
	for i, m := range msgs {
		if i > lo && (i-lo == most || size+m.Size() > MaxBatchBytes) {
			out = append(out, span{lo, i})
			lo, size = i, 0
		}
		size += m.Size()
	}
	if lo < len(msgs) {
		out = append(out, span{lo, len(msgs)})
	}
	return out
}

// retrier sends one batch, retrying the entries it refuses.
type retrier struct {
	retries int
	sleep   func(ctx context.Context, d time.Duration) error
	rand    func(n int64) int64
}

func (r retrier) sendBatch(ctx context.Context, s Sender, msgs []Message) error {
	pending := make([]Message, len(msgs))
	for i, m := range msgs {
		m.ID = strconv.Itoa(i)
		pending[i] = m
	}
	for try := 0; ; try++ {
		err := s.SendBatch(ctx, pending)
		var be *BatchError
		if err == nil || !errors.As(err, &be) {
			return err // sent, or failed as a whole (already retried below the Sender)
		}
		failed := make(map[string]bool, len(be.Failed))
		for _, f := range be.Failed {
			failed[f.ID] = true
		}
		next := pending[:0:0]
		for _, m := range pending {
			if failed[m.ID] {
				next = append(next, m)
			}
		}
		switch {
		case len(next) == 0:
			return nil // a BatchError that names no entry of the batch
		case try == r.retries:
			return err
		}
		if serr := r.sleep(ctx, r.backoff(try)); serr != nil {
			return fmt.Errorf("%w (not retried: %w)", err, serr)
		}
		pending = next
	}
}

// backoff returns the wait before retry try+1: uniform in [0, bound), the
// bound doubling from retryBase with each try up to retryCap.
func (r retrier) backoff(try int) time.Duration {
	bound := retryCap
	if try < 16 && retryBase<<try < retryCap {
		bound = retryBase << try
	}
	return time.Duration(r.rand(int64(bound)))
}

// sleepCtx waits d, or until ctx ends: then it returns ctx's error.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
