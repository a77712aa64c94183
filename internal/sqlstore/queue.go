package sqlstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/queue"
)

// CheckQueueOpen rejects what opening a queue rules out: an empty name,
// a dead-letter queue without a positive maximum receive count (or the
// other way round), and a queue that is its own dead-letter queue.
func CheckQueueOpen(name, deadLetter string, maxReceives int) error {
	switch {
	case name == "":
		return errors.New("open queue: empty name")
	case maxReceives < 0 || (deadLetter == "") != (maxReceives == 0):
		return fmt.Errorf("open queue %s: dead-letter queue %q with max receives %d: give both or neither", name, deadLetter, maxReceives)
	case deadLetter == name:
		return fmt.Errorf("open queue %s: a queue cannot be its own dead-letter queue", name)
	}
	return nil
}

// A receipt handle is "<prefix>-<message id>": the prefix is random, one
// per receive, so that a handle is valid only until the message's next
// receive; the id finds the message by its key.

// ReceiptPrefix returns a fresh random prefix, "-" included.
func ReceiptPrefix() string { return rand.Text() + "-" }

// ReceiptID returns the message id of a receipt handle, and false when h
// is not one.
func ReceiptID(h string) (int64, bool) {
	i := strings.LastIndexByte(h, '-')
	if i <= 0 {
		return 0, false
	}
	id, err := strconv.ParseInt(h[i+1:], 10, 64)
	return id, err == nil && id > 0
}

// ReceiptIDs returns the message ids of the handles that are receipt
// handles, in order.
func ReceiptIDs(handles []string) []int64 {
	ids := make([]int64, 0, len(handles))
	for _, h := range handles {
		if id, ok := ReceiptID(h); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// DeleteOutcome is a batch delete's result: nil when every handle was
// deleted, else a *queue.BatchError whose entries, one per handle not
// deleted, wrap queue.ErrInvalidReceipt. unsure says the delete was sent
// again after an unknown outcome: a well-formed handle it did not find
// may have been deleted by the first send, and counts as deleted.
func DeleteOutcome(handles []string, deleted map[string]bool, unsure bool) error {
	var failed []queue.EntryError
	for _, h := range handles {
		if _, ok := ReceiptID(h); !deleted[h] && !(unsure && ok) {
			failed = append(failed, queue.EntryError{ID: h, Err: queue.ErrInvalidReceipt})
		}
	}
	if len(failed) > 0 {
		return &queue.BatchError{Failed: failed}
	}
	return nil
}

// VisibilityChange checks a change of visibility and returns the id of
// its message and the time it hides the message until: p.Now (or
// nowFunc's time when zero) plus p.Timeout. The error wraps
// queue.ErrInvalidReceipt when the handle is not one.
func VisibilityChange(p queue.ChangeVisibilityParams, nowFunc func() time.Time) (id int64, until time.Time, err error) {
	if p.Timeout < 0 {
		return 0, time.Time{}, fmt.Errorf("negative timeout %s", p.Timeout)
	}
	id, ok := ReceiptID(p.ReceiptHandle)
	if !ok {
		return 0, time.Time{}, queue.ErrInvalidReceipt
	}
	now := p.Now
	if now.IsZero() {
		now = nowFunc()
	}
	return id, now.Add(p.Timeout), nil
}

// LookFunc is one look for up to max messages visible at now, hiding
// those it returns for visibility.
type LookFunc func(ctx context.Context, max int, visibility time.Duration, now time.Time) ([]queue.Delivery, error)

// LongPoll is a queue's receive schedule: the looks a Receive makes until
// a message is visible, the wait has passed or ctx is done.
type LongPoll struct {
	Queue    string // for errors
	MaxBatch int    // the most messages one receive may return
	// NowFunc is the queue's clock, for receives whose params carry no Now.
	NowFunc func() time.Time
	// Interval is the time between looks when nothing wakes the poll.
	Interval time.Duration
	// SubscribeFunc, when not nil, returns a channel that is sent to when
	// a message may have been sent to the queue, and the function that
	// ends the subscription; a long poll then looks again at once.
	SubscribeFunc func() (woken <-chan struct{}, unsubscribe func())
}

// Receive checks p and returns the first look's messages that are not
// none; nil after p.Wait with none. A zero p.Now means NowFunc's time at
// every look; otherwise later looks use p.Now plus the time waited. On
// ctx's end it returns ctx's error; a look's error ends it.
func (l LongPoll) Receive(ctx context.Context, p queue.ReceiveParams, look LookFunc) ([]queue.Delivery, error) {
	switch {
	case p.Max < 1 || p.Max > l.MaxBatch:
		return nil, fmt.Errorf("receive from %s: max %d not in 1..%d", l.Queue, p.Max, l.MaxBatch)
	case p.Visibility < 0 || p.Wait < 0:
		return nil, fmt.Errorf("receive from %s: negative visibility %s or wait %s", l.Queue, p.Visibility, p.Wait)
	}
	var woken <-chan struct{}
	if p.Wait > 0 && l.SubscribeFunc != nil {
		ch, unsubscribe := l.SubscribeFunc()
		defer unsubscribe()
		woken = ch
	}
	began := time.Now()
	now := p.Now
	for {
		if p.Now.IsZero() {
			now = l.NowFunc()
		}
		ds, err := look(ctx, p.Max, p.Visibility, now)
		if err != nil || len(ds) > 0 {
			return ds, err
		}
		waited := time.Since(began)
		if waited >= p.Wait {
			return nil, nil
		}
		timer := time.NewTimer(min(l.Interval, p.Wait-waited))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("receive from %s: %w", l.Queue, ctx.Err())
		case <-woken:
			timer.Stop()
		case <-timer.C:
		}
		if !p.Now.IsZero() {
			now = p.Now.Add(time.Since(began))
		}
	}
}
