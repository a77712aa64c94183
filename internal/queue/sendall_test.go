package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeSender accepts every entry except those failFunc rejects; it records
// every call.
type fakeSender struct {
	mu       sync.Mutex
	calls    [][]Message
	accepted map[string]int // body → times accepted
	// failFunc returns the error for one entry on the call-th call that
	// carried its body (1-based), or nil to accept it.
	failFunc func(body string, call int) error
	// callErrFunc, when set, fails whole calls: it gets the call's number.
	callErrFunc func(call int) error
	seen        map[string]int
}

func newFakeSender() *fakeSender {
	return &fakeSender{accepted: map[string]int{}, seen: map[string]int{}}
}

func (f *fakeSender) SendBatch(ctx context.Context, msgs []Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, append([]Message(nil), msgs...))
	if len(msgs) == 0 || len(msgs) > MaxBatch {
		return ErrBatchTooLarge
	}
	size, ids := 0, map[string]bool{}
	for _, m := range msgs {
		size += m.Size()
		if ids[m.ID] {
			return ErrBatchTooLarge
		}
		ids[m.ID] = true
	}
	if size > MaxBatchBytes {
		return ErrBatchTooLarge
	}
	if f.callErrFunc != nil {
		if err := f.callErrFunc(len(f.calls)); err != nil {
			return err
		}
	}
	var be BatchError
	for _, m := range msgs {
		b := string(m.Body)
		f.seen[b]++
		if f.failFunc != nil {
			if err := f.failFunc(b, f.seen[b]); err != nil {
				be.Failed = append(be.Failed, EntryError{ID: m.ID, Err: err})
				continue
			}
		}
		f.accepted[b]++
	}
	if len(be.Failed) > 0 {
		return &be
	}
	return nil
}

func messages(n, size int) []Message {
	out := make([]Message, n)
	for i := range out {
		b := fmt.Sprintf("m%d", i)
		out[i] = Message{ID: "ignored", Body: []byte(b + strings.Repeat("x", max(0, size-len(b))))}
	}
	return out
}

func bodyOf(m Message) string { return strings.TrimRight(string(m.Body), "x") }

func TestSendAllRetriesOnlyFailedEntries(t *testing.T) {
	t.Parallel()
	f := newFakeSender()
	throttled := errors.New("throttled")
	f.failFunc = func(body string, call int) error {
		if (body == "m3" || body == "m7") && call == 1 {
			return throttled
		}
		if body == "m12" && call <= 2 {
			return throttled
		}
		return nil
	}
	msgs := messages(15, 0)
	sleeps := &sleepRecorder{}
	sent, err := SendAll(t.Context(), f, msgs, sleeps.options(&SendAllOptions{Parallel: 1}))
	require.NoError(t, err)
	require.Len(t, sleeps.waits, 3, "a wait before each retry")
	require.Equal(t, 15, sent)
	for _, m := range msgs {
		require.Equal(t, 1, f.accepted[string(m.Body)], "accepted count of %s", m.Body)
	}

	var retried [][]string
	for _, c := range f.calls[1:] {
		var bs []string
		for _, m := range c {
			bs = append(bs, bodyOf(m))
		}
		retried = append(retried, bs)
	}
	// Calls: batch 0..9, retry {3,7}, batch 10..14, retry {12}, retry {12}.
	require.Len(t, f.calls, 5)
	require.Len(t, f.calls[0], 10)
	require.Equal(t, []string{"m3", "m7"}, retried[0])
	require.Len(t, retried[1], 5)
	require.Equal(t, []string{"m12"}, retried[2])
	require.Equal(t, []string{"m12"}, retried[3])
}

func TestSendAllAssignsDistinctIDsPerBatch(t *testing.T) {
	t.Parallel()
	f := newFakeSender()
	_, err := SendAll(t.Context(), f, messages(23, 0), nil)
	require.NoError(t, err, "the messages all carry the same id; SendAll must replace them")
	require.Len(t, f.calls, 3)
}

func TestSendAllReportsWhatWasSent(t *testing.T) {
	t.Parallel()
	f := newFakeSender()
	down := errors.New("down")
	f.failFunc = func(body string, call int) error {
		if body == "m14" {
			return down
		}
		return nil
	}
	sent, err := SendAll(t.Context(), f, messages(25, 0), (&sleepRecorder{}).options(&SendAllOptions{Parallel: 1, Retries: 2}))
	var be *BatchError
	require.ErrorAs(t, err, &be)
	require.Len(t, be.Failed, 1)
	require.ErrorIs(t, be.Failed[0].Err, down)
	require.Equal(t, 10, sent, "the second batch (10..19) failed, so only the first is known sent")
	require.Equal(t, 3, f.seen["m14"], "one try and two retries")
	require.Equal(t, 1, f.accepted["m24"], "later batches are still sent")
}

func TestSendAllDoesNotResendFailedCalls(t *testing.T) {
	t.Parallel()
	f := newFakeSender()
	reset := errors.New("connection reset")
	f.callErrFunc = func(call int) error {
		if call == 1 {
			return reset
		}
		return nil
	}
	sleeps := &sleepRecorder{}
	sent, err := SendAll(t.Context(), f, messages(4, 0), sleeps.options(nil))
	require.ErrorIs(t, err, reset, "the Sender's client has retried the call already")
	require.Equal(t, 0, sent)
	require.Len(t, f.calls, 1)
	require.Empty(t, sleeps.waits)
}

// sleepRecorder stands in for the clock and the jitter: it records each
// wait without waiting, and draws the largest value (n-1) unless rand is
// set.
type sleepRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
	rand  func(n int64) int64
	// before, when set, runs at each wait and may end it with an error.
	before func(ctx context.Context) error
}

func (r *sleepRecorder) options(o *SendAllOptions) *SendAllOptions {
	if o == nil {
		o = &SendAllOptions{}
	}
	o.sleepFunc = func(ctx context.Context, d time.Duration) error {
		r.mu.Lock()
		r.waits = append(r.waits, d)
		r.mu.Unlock()
		if r.before != nil {
			return r.before(ctx)
		}
		return nil
	}
	o.randFunc = func(n int64) int64 {
		if r.rand != nil {
			return r.rand(n)
		}
		return n - 1
	}
	return o
}

func TestSendAllBacksOffBeforeRetries(t *testing.T) {
	t.Parallel()
	f := newFakeSender()
	f.failFunc = func(body string, call int) error {
		if body == "m1" && call <= 7 {
			return errors.New("throttled")
		}
		return nil
	}
	sleeps := &sleepRecorder{}
	sent, err := SendAll(t.Context(), f, messages(3, 0), sleeps.options(&SendAllOptions{Retries: 7}))
	require.NoError(t, err)
	require.Equal(t, 3, sent)
	require.Len(t, f.calls, 8)
	ms := time.Millisecond
	require.Equal(t, []time.Duration{50*ms - 1, 100*ms - 1, 200*ms - 1, 400*ms - 1, 800*ms - 1, time.Second - 1, time.Second - 1},
		sleeps.waits, "the bound doubles from 50ms up to 1s; the wait is drawn below it")
}

func TestSendAllJitter(t *testing.T) {
	t.Parallel()
	f := newFakeSender()
	f.failFunc = func(body string, call int) error {
		if call <= 3 {
			return errors.New("throttled")
		}
		return nil
	}
	var bounds []int64
	sleeps := &sleepRecorder{rand: func(n int64) int64 { bounds = append(bounds, n); return n / 4 }}
	_, err := SendAll(t.Context(), f, messages(1, 0), sleeps.options(nil))
	require.NoError(t, err)
	ms := int64(time.Millisecond)
	require.Equal(t, []int64{50 * ms, 100 * ms, 200 * ms}, bounds, "one draw per retry, below the bound")
	require.Equal(t, []time.Duration{12500 * time.Microsecond, 25 * time.Millisecond, 50 * time.Millisecond}, sleeps.waits)
}

func TestSendAllStopsRetryingWhenCtxEnds(t *testing.T) {
	t.Parallel()
	f := newFakeSender()
	throttled := errors.New("throttled")
	f.failFunc = func(body string, call int) error { return throttled }
	ctx, cancel := context.WithCancel(t.Context())
	sleeps := &sleepRecorder{before: func(ctx context.Context) error { cancel(); return ctx.Err() }}
	sent, err := SendAll(ctx, f, messages(2, 0), sleeps.options(nil))
	require.ErrorIs(t, err, context.Canceled)
	var be *BatchError
	require.ErrorAs(t, err, &be, "the entries' failure is kept")
	require.Equal(t, 0, sent)
	require.Len(t, f.calls, 1, "no call after ctx ended")
	require.Len(t, sleeps.waits, 1)
}

func TestSleepCtx(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, sleepCtx(ctx, time.Hour), context.Canceled, "an ended ctx ends the wait at once")
	require.NoError(t, sleepCtx(t.Context(), 0))
}

func TestSendAllDoesNotRetryOversizedBatches(t *testing.T) {
	t.Parallel()
	f := newFakeSender()
	sent, err := SendAll(t.Context(), f, messages(1, MaxBatchBytes+1), nil)
	require.ErrorIs(t, err, ErrBatchTooLarge)
	require.Equal(t, 0, sent)
	require.Len(t, f.calls, 1)
}

func TestSplit(t *testing.T) {
	t.Parallel()
	third := MaxBatchBytes / 3
	cases := []struct {
		name string
		msgs []Message
		want []span
	}{
		{"none", nil, nil},
		{"one", messages(1, 10), []span{{0, 1}}},
		{"exactly one batch", messages(MaxBatch, 10), []span{{0, 10}}},
		{"entry limit", messages(25, 10), []span{{0, 10}, {10, 20}, {20, 25}}},
		{"byte limit", messages(5, 100*1024), []span{{0, 2}, {2, 4}, {4, 5}}},
		{"bytes exactly at the limit", messages(4, MaxBatchBytes/4), []span{{0, 4}}},
		{"one byte over the limit", append(messages(3, third), messages(1, MaxBatchBytes-3*third+1)...), []span{{0, 3}, {3, 4}}},
		{"oversized message alone", append(messages(2, 10), messages(1, MaxBatchBytes+1)...), []span{{0, 2}, {2, 3}}},
		{"attributes count", []Message{
			{Body: []byte(strings.Repeat("x", MaxBatchBytes-4))},
			{Attributes: map[string]string{"ab": "cd"}},
			{Attributes: map[string]string{"a": "b"}},
		}, []span{{0, 2}, {2, 3}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := split(c.msgs, MaxBatch)
			require.Equal(t, c.want, got)
			for _, s := range got {
				size := 0
				for _, m := range c.msgs[s.lo:s.hi] {
					size += m.Size()
				}
				require.LessOrEqual(t, s.hi-s.lo, MaxBatch)
				require.True(t, size <= MaxBatchBytes || s.hi-s.lo == 1, "span %v has %d bytes", s, size)
			}
		})
	}
}

// largeSender takes batches of up to most entries (LargeBatches); it
// records the size of each call.
type largeSender struct {
	mu    sync.Mutex
	most  int
	sizes []int
}

func (l *largeSender) MaxBatchSize() int { return l.most }

func (l *largeSender) SendBatch(_ context.Context, msgs []Message) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := CheckBatchUpTo(msgs, l.most); err != nil {
		return err
	}
	l.sizes = append(l.sizes, len(msgs))
	return nil
}

// A sender that takes large batches gets them, still within
// MaxBatchBytes.
func TestSendAllLargeBatches(t *testing.T) {
	t.Parallel()
	l := &largeSender{most: 100}
	sent, err := SendAll(t.Context(), l, messages(230, 0), &SendAllOptions{Parallel: 1})
	require.NoError(t, err)
	require.Equal(t, 230, sent)
	require.Equal(t, []int{100, 100, 30}, l.sizes)

	l = &largeSender{most: 100}
	_, err = SendAll(t.Context(), l, messages(100, MaxBatchBytes/40), &SendAllOptions{Parallel: 1})
	require.NoError(t, err)
	require.Equal(t, []int{40, 40, 20}, l.sizes, "cut at MaxBatchBytes")
}
