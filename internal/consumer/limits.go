package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/ratelimit"
)

// ErrNoRateLimits matches the error of a limit taken on a consumer
// without a rate limit store.
var ErrNoRateLimits = errors.New("no rate limit store")

// taskLimiter is a message's baton.Limiter: the limits of its job, taken
// from the consumer's store. The slots of in-flight limits it takes are
// held under one holder name until the message's run ends (freeAll), and
// renewed to the claim's new end by each heartbeat (renew).
type taskLimiter struct {
	store ratelimit.Store
	job   baton.Job
	now   func() time.Time
	owner string
	key   ledger.ItemKey
	log   *slog.Logger // the message's; nil: none

	// holder is the name the slots are held under (holderName): made
	// once a limit is taken, not for every item.
	holderOnce sync.Once
	holder     string

	mu    sync.Mutex
	until time.Time      // the end of the holds: the item's lease
	held  map[string]int // in-flight limit → slot held
}

func newTaskLimiter(c *Consumer, job baton.Job, key ledger.ItemKey, until time.Time) *taskLimiter {
	return &taskLimiter{store: c.RateLimits, job: job, now: c.nowFunc(), until: until, owner: c.Owner, key: key}
}

// holderName is the name of the limiter's holds:
// <owner>/<item key>/<random>, the same for all of them.
func (l *taskLimiter) holderName() string {
	l.holderOnce.Do(func() {
		l.holder = l.owner + "/" + l.key.String() + "/" + strconv.FormatUint(rand.Uint64(), 36)
	})
	return l.holder
}

// HolderItem reads the item key and the consumer's owner out of the
// holder name of an in-flight slot the consumer took for an item
// (<owner>/<item key>/<random>): ok is false for a holder of another
// form (a slot taken by some other program). An owner may hold '/'
// itself: the item key is the first suffix that parses as one.
func HolderItem(holder string) (item ledger.ItemKey, owner string, ok bool) {
	rest, _, ok := cutLast(holder, "/")
	if !ok {
		return ledger.ItemKey{}, "", false
	}
	for i := 0; i < len(rest); i++ {
		if rest[i] != '/' {
			continue
		}
		if k, err := ledger.ParseItemKey(rest[i+1:]); err == nil {
			return k, rest[:i], true
		}
	}
	return ledger.ItemKey{}, "", false
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

func (l *taskLimiter) Wait(ctx context.Context, name string) error {
	return l.wait(ctx, name, "", false)
}

func (l *taskLimiter) WaitKey(ctx context.Context, name, key string) error {
	return l.wait(ctx, name, key, true)
}

// record is the record name of limit name for key (keyed) after checking
// them: the limit's name, or its key's (ratelimit.KeyedName).
func (l *taskLimiter) record(name, key string, keyed bool) (baton.RateLimit, string, error) {
	r, ok := jobspec.RateLimit(l.job, name)
	switch {
	case !ok:
		return r, "", fmt.Errorf("job %s declares no rate limit %q: %w", l.job.Name, name, baton.ErrUnknownLimit)
	case r.Keyed && !keyed:
		return r, "", fmt.Errorf("rate limit %s: %w: it is Keyed; take it with Task.WaitKey", name, baton.ErrLimitKey)
	case !r.Keyed && keyed:
		return r, "", fmt.Errorf("rate limit %s: %w: it is not Keyed, and key %s was given; take it with Task.Wait", name, baton.ErrLimitKey, quoteKey(key))
	case keyed && key == "":
		return r, "", fmt.Errorf("rate limit %s: %w: empty key", name, baton.ErrLimitKey)
	case keyed && len(key) > baton.MaxLimitKey:
		return r, "", fmt.Errorf("rate limit %s: %w: key %s is %d bytes, at most %d", name, baton.ErrLimitKey, quoteKey(key), len(key), baton.MaxLimitKey)
	case keyed:
		return r, ratelimit.KeyedName(name, key), nil
	}
	return r, name, nil
}

// quoteKey quotes a key for a message or a log, cut to 64 bytes: a key is
// data, never logged whole.
func quoteKey(key string) string {
	const most = 64
	if len(key) > most {
		return strconv.Quote(key[:most]) + "…"
	}
	return strconv.Quote(key)
}

// waitLogged is the shortest wait for a start that wait logs (DEBUG).
const waitLogged = 100 * time.Millisecond

func (l *taskLimiter) wait(ctx context.Context, name, key string, keyed bool) error {
	r, record, err := l.record(name, key, keyed)
	if err != nil {
		return err
	}
	if l.store == nil {
		return fmt.Errorf("rate limit %s: %w", name, ErrNoRateLimits)
	}
	if l.log != nil {
		start := l.now()
		defer func() {
			if waited := l.now().Sub(start); waited >= waitLogged {
				attrs := []any{slog.String("phase", "limit"), slog.String("rate_limit", name), slog.Duration("waited", waited)}
				if keyed {
					attrs = append(attrs, slog.String("limit_key", quoteKey(key)))
				}
				l.log.DebugContext(ctx, "waited on a rate limit", attrs...)
			}
		}()
	}
	lm := ratelimit.Limiter{Store: l.store, NowFunc: l.now}
	if r.InFlight == 0 {
		return lm.Wait(ctx, ratelimit.Limit{Name: record, Starts: r.Starts, Per: r.Per, Shards: r.Shards})
	}
	l.mu.Lock()
	_, have := l.held[record]
	l.mu.Unlock()
	if have {
		return nil // the item holds a slot of it already
	}
	slot, err := lm.Acquire(ctx, ratelimit.Limit{Name: record, InFlight: r.InFlight}, l.holderName(), l.holdUntil)
	if err != nil {
		return err
	}
	l.mu.Lock()
	if l.held == nil {
		l.held = map[string]int{}
	}
	l.held[record] = slot
	l.mu.Unlock()
	return nil
}

func (l *taskLimiter) holdUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// renew moves the holds' end to until (a heartbeat's new lease end),
// renewing every slot held.
func (l *taskLimiter) renew(ctx context.Context, until time.Time) error {
	l.mu.Lock()
	l.until = until
	held := make(map[string]int, len(l.held))
	for n, s := range l.held {
		held[n] = s
	}
	l.mu.Unlock()
	now := l.now()
	var errs []error
	for name, slot := range held {
		err := l.store.Hold(ctx, ratelimit.SlotParams{Name: name, Slot: slot, Holder: l.holderName(), Until: until, Now: now})
		if err != nil {
			errs = append(errs, fmt.Errorf("rate limit %s: renew slot %d: %w", name, slot, err))
		}
	}
	return errors.Join(errs...)
}

// freeAll gives back every slot held; a slot that cannot be freed comes
// back when its hold runs out.
func (l *taskLimiter) freeAll(ctx context.Context, log *slog.Logger) {
	l.mu.Lock()
	held := l.held
	l.held = nil
	l.mu.Unlock()
	for name, slot := range held {
		err := l.store.Free(ctx, ratelimit.SlotParams{Name: name, Slot: slot, Holder: l.holderName()})
		if err != nil {
			log.WarnContext(ctx, "rate limit slot not freed: it comes back when its hold runs out",
				slog.String("rate_limit", name), slog.Int("slot", slot), slog.Any("error", err))
		}
	}
}

// ErrLimited matches the reason of a message given back because its
// item's key of a keyed PerItem limit had no start free within
// KeyedWait: it is redelivered after RetryDelay or the limit's window,
// without an attempt spent, and requeued rather than dead-lettered at its
// last receive.
var ErrLimited = errors.New("waiting on a keyed rate limit")

// KeyedWait bounds how long an item waits for a start of a keyed PerItem
// limit before its message is given back: a hot key's items must not hold
// the consumer's slots that other keys' items could use.
const KeyedWait = 2 * time.Second

// itemLimits takes a start (or a slot) of each of the job's PerItem
// limits before its item starts, waiting until the deadline less the
// margin at most; a wait cut short leaves the item unstarted (retried
// later). A keyed limit's start is waited for KeyedWait at most: then the
// message is given back (ErrLimited) for a later delivery.
func (c *Consumer) itemLimits(ctx context.Context, deadline time.Time, m *messageRun) (verdict, bool) {
	d := m.d
	var per []baton.RateLimit
	for _, r := range d.job.RateLimits {
		if r.PerItem {
			per = append(per, r)
		}
	}
	if len(per) == 0 {
		return verdict{}, true
	}
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-d.job.Limits.DeadlineMargin))
		defer cancel()
	}
	for _, r := range per {
		if !r.Keyed {
			if err := m.limits.Wait(ctx, r.Name); err != nil {
				return m.fail(StatusNotStarted, fmt.Errorf("%s not started: %w", d.key, err)), false
			}
			continue
		}
		task := baton.Task{Key: d.key, Asset: d.key.Asset, Nominal: d.key.Run.Nominal, Inputs: m.inputs, Payload: m.payload, Parent: m.parent}
		key := r.Key(task)
		wctx, cancel := context.WithTimeoutCause(ctx, KeyedWait, ErrLimited)
		err := m.limits.WaitKey(wctx, r.Name, key)
		cancel()
		switch {
		case errors.Is(err, baton.ErrLimitKey):
			return m.fail(StatusNotStarted, fmt.Errorf("%s not started: %w", d.key, err)), false
		case err != nil && ctx.Err() == nil && errors.Is(context.Cause(wctx), ErrLimited):
			delay := limitedDelay(r)
			m.log.InfoContext(ctx, "item given back: its key's limit is busy", slog.String("phase", "limit"),
				slog.String("rate_limit", r.Name), slog.String("limit_key", quoteKey(key)), slog.Duration("retry_in", delay))
			m.out.Limit = r.Name
			v := m.fail(StatusLimited, fmt.Errorf("%s not started: rate limit %s key %s: %w", d.key, r.Name, quoteKey(key), ErrLimited))
			v.delay = delay
			now := c.now()
			c.noteWait(ctx, m, ledger.NoteWaitParams{Key: d.key, Unclaimed: true, Now: now,
				Wait: ledger.ItemWait{At: now.Add(delay), Limit: r.Name, Key: key}})
			return v, false
		case err != nil:
			return m.fail(StatusNotStarted, fmt.Errorf("%s not started: %w", d.key, err)), false
		}
	}
	return verdict{}, true
}

// noteWait notes on the item what its next attempt waits for, when the
// ledger can (ledger.WaitNoter): for operators only, so a note that
// fails is logged and the message's verdict stands.
//
// A queue that cannot hide a message for a delay (no
// queue.VisibilityChanger) redelivers it as it will: the time is not
// known, and nothing is noted.
func (c *Consumer) noteWait(ctx context.Context, m *messageRun, p ledger.NoteWaitParams) {
	wn, ok := c.Ledger.(ledger.WaitNoter)
	if _, hides := c.Queue.(queue.VisibilityChanger); !ok || !hides || m.d.d.ReceiptHandle == "" {
		return
	}
	if _, err := wn.NoteWait(ctx, p); err != nil {
		m.log.DebugContext(ctx, "next attempt not noted", slog.String("phase", "limit"), slog.Any("error", err))
	}
}

// limitedDelay is how long a message given back by a busy key waits: the
// rest of a window is at most Per, and a slot comes back within about
// SlotPoll; at least a second, the shortest a queue hides a message for.
func limitedDelay(r baton.RateLimit) time.Duration {
	if r.InFlight > 0 {
		return time.Second
	}
	return max(time.Second, min(r.Per, time.Minute))
}
