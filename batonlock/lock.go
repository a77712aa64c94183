package batonlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/lease"
)

// Lock is one acquisition of a key's lock. Its methods may be called
// concurrently.
type Lock struct {
	l     *Locker
	key   string
	owner string
	fence int64

	ctx    context.Context
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	acquired time.Time
	expires  time.Time
	ended    error         // non-nil once lost or released
	renewed  chan struct{} // a renewal moved expires
	stop     chan struct{} // closed when ended
}

// held returns the Lock of an acquisition and starts its watch: the
// heartbeat, and the end of its Context at expiry.
func (l *Locker) held(ctx context.Context, got lease.Lease) *Lock {
	k := &Lock{
		l: l, key: got.Job, owner: got.Owner, fence: got.Fence, acquired: got.AcquiredAt, expires: got.ExpiresAt,
		renewed: make(chan struct{}, 1), stop: make(chan struct{}),
	}
	k.ctx, k.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	if !l.nowatch {
		go k.watch()
	}
	return k
}

// Key returns the lock's key.
func (k *Lock) Key() string { return k.key }

// Owner returns this acquisition's owner token (Options.Holder#random).
func (k *Lock) Owner() string { return k.owner }

// Fence returns this acquisition's fence: greater than every fence the
// key had before. Condition your writes on it.
func (k *Lock) Fence() int64 { return k.fence }

// AcquiredAt returns when the lock was acquired, by the locker's clock.
func (k *Lock) AcquiredAt() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.acquired
}

// ExpiresAt returns when the lock expires unless renewed.
func (k *Lock) ExpiresAt() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.expires
}

// Context ends when the lock is lost (a renewal refused, or its expiry
// passed without a renewal: the cause matches ErrLost) or released (the
// cause matches ErrReleased). It carries the values of the context the
// lock was acquired with, not its cancellation.
func (k *Lock) Context() context.Context { return k.ctx }

// Renew extends the lock to Now+TTL. Once the lock is lost (or released)
// it is refused with an error matching ErrLost, and the Context ends.
// Another error (the store unreachable) leaves the lock as it was: it is
// lost at its expiry unless a later renewal succeeds.
func (k *Lock) Renew(ctx context.Context) error {
	return k.renewAt(ctx, k.l.now())
}

func (k *Lock) renewAt(ctx context.Context, now time.Time) error {
	k.mu.Lock()
	ended := k.ended
	k.mu.Unlock()
	if ended != nil {
		return fmt.Errorf("renew lock %q (fence %d): %w", k.key, k.fence, errors.Join(ErrLost, ended))
	}
	got, err := k.l.raw.Renew(ctx, lease.RenewParams{Job: k.key, Owner: k.owner, Fence: k.fence, TTL: k.l.ttl, Now: now})
	if errors.Is(err, lease.ErrNotHolder) {
		lost := fmt.Errorf("renew lock %q (fence %d): %w: it expired or another owner took it", k.key, k.fence, ErrLost)
		k.end(lost)
		return lost
	}
	if err != nil {
		return fmt.Errorf("renew lock %q: %w", k.key, err)
	}
	k.mu.Lock()
	if k.ended == nil {
		k.expires = got.ExpiresAt
	}
	k.acquired = got.AcquiredAt
	k.mu.Unlock()
	select {
	case k.renewed <- struct{}{}:
	default:
	}
	return nil
}

// Release frees the lock, keeping its fence, and ends the Context (cause
// ErrReleased). A lock that is no longer this acquisition's (lost,
// released, taken over) is refused with an error matching ErrNotOwner
// (and ErrLost when it was lost): nothing is released.
func (k *Lock) Release(ctx context.Context) error {
	k.mu.Lock()
	ended := k.ended
	k.mu.Unlock()
	if ended != nil && !errors.Is(ended, ErrReleased) {
		return fmt.Errorf("release lock %q (fence %d): %w", k.key, k.fence, errors.Join(ErrNotOwner, ended))
	}
	err := k.l.raw.Release(ctx, lease.ReleaseParams{Job: k.key, Owner: k.owner, Fence: k.fence})
	if errors.Is(err, lease.ErrNotHolder) {
		err = fmt.Errorf("release lock %q (fence %d): %w: another owner took it or it was released", k.key, k.fence, ErrNotOwner)
		k.end(fmt.Errorf("%w: %w", ErrLost, err))
		return err
	}
	if err != nil {
		return fmt.Errorf("release lock %q: %w", k.key, err)
	}
	k.end(fmt.Errorf("lock %q (fence %d): %w", k.key, k.fence, ErrReleased))
	return nil
}

// end records why the lock ended, once, and ends the Context.
func (k *Lock) end(cause error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ended != nil {
		return
	}
	k.ended = cause
	k.cancel(cause)
	close(k.stop)
}

// watch renews the lock every heartbeat (unless disabled) and ends it at
// its expiry when no renewal moved it.
func (k *Lock) watch() {
	beat := k.l.beat
	for {
		expiry := k.ExpiresAt().Sub(k.l.now())
		if expiry <= 0 {
			k.end(fmt.Errorf("lock %q (fence %d): %w: it expired without a renewal", k.key, k.fence, ErrLost))
			return
		}
		next := expiry
		if beat > 0 {
			next = min(beat, expiry)
		}
		t := time.NewTimer(next)
		select {
		case <-k.stop:
			t.Stop()
			return
		case <-k.renewed:
			t.Stop()
		case <-t.C:
			if beat > 0 && next < expiry {
				rctx, cancel := context.WithTimeout(k.ctx, max(expiry-next, time.Second))
				if err := k.Renew(rctx); err != nil && !errors.Is(err, ErrLost) {
					k.l.log.WarnContext(k.ctx, "lock heartbeat failed", slog.String("key", k.key), slog.Any("error", err))
				}
				cancel()
			}
		}
	}
}
