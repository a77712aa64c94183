package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Class is one queue read by a Priority receiver.
type Class struct {
	Receiver Receiver
	// Share is the least fraction of the batches the class receives while
	// it is backlogged, whatever the classes before it hold (0..1; the
	// shares of a Priority sum to at most 1).
	Share float64
}

// Priority reads several queues as one Receiver: each receive serves the
// first class (in the order given, highest first) that has messages,
// except that a class whose share of the batches has fallen behind its
// Share goes first. A class that is found empty banks no credit, so a
// class coming back does not take more than its share. Each delivery's
// receipt handle names the class it came from, so that deletes and
// visibility changes go to that class's queue (Class tells which).
type Priority struct {
	classes []Class
	// PollEvery is the pause between rounds of a receive that found every
	// class empty; 0 means 50ms.
	PollEvery time.Duration

	mu     sync.Mutex
	credit []float64
}

// NewPriority returns a Priority over classes, highest first.
func NewPriority(classes ...Class) (*Priority, error) {
	if len(classes) == 0 {
		return nil, errors.New("priority: no classes")
	}
	sum := 0.0
	for i, c := range classes {
		if c.Receiver == nil || c.Share < 0 || c.Share > 1 {
			return nil, fmt.Errorf("priority: class %d: a receiver and a share in 0..1 are required", i)
		}
		sum += c.Share
	}
	if sum > 1+1e-9 {
		return nil, fmt.Errorf("priority: shares sum to %g, more than 1", sum)
	}
	return &Priority{classes: append([]Class(nil), classes...), credit: make([]float64, len(classes))}, nil
}

// Receive returns the messages of one class, chosen as Priority says,
// waiting up to p.Wait (polling the classes) when every class is empty.
func (p *Priority) Receive(ctx context.Context, rp ReceiveParams) ([]Delivery, error) {
	every := p.PollEvery
	if every <= 0 {
		every = 50 * time.Millisecond
	}
	deadline := time.Now().Add(rp.Wait)
	for {
		ds, err := p.receiveOnce(ctx, rp)
		if err != nil || len(ds) > 0 {
			return ds, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		t := time.NewTimer(min(every, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil
		case <-t.C:
		}
		rp.Now = rp.Now.Add(min(every, left))
	}
}

// order is the classes to try this round: those whose credit reached a
// whole batch first (the lowest class first), then every class highest
// first.
func (p *Priority) order() []int {
	out := make([]int, 0, 2*len(p.classes))
	for i := range p.classes {
		p.credit[i] += p.classes[i].Share
	}
	for i := len(p.classes) - 1; i >= 0; i-- {
		if p.credit[i] >= 1 {
			out = append(out, i)
		}
	}
	for i := range p.classes {
		out = append(out, i)
	}
	return out
}

func (p *Priority) receiveOnce(ctx context.Context, rp ReceiveParams) ([]Delivery, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	tried := make([]bool, len(p.classes))
	for _, i := range p.order() {
		if tried[i] {
			continue
		}
		tried[i] = true
		q := rp
		q.Wait = 0
		ds, err := p.classes[i].Receiver.Receive(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("class %d: %w", i, err)
		}
		if len(ds) == 0 {
			p.credit[i] = min(p.credit[i], 0) // empty: no credit banked
			continue
		}
		p.credit[i] = max(p.credit[i]-1, -1)
		for k := range ds {
			ds[k].ReceiptHandle = strconv.Itoa(i) + ":" + ds[k].ReceiptHandle
		}
		return ds, nil
	}
	return nil, nil
}

// Class returns the index of the class a receipt handle of p came from,
// and the handle its queue knows.
func (p *Priority) Class(handle string) (int, string, error) {
	n, h, ok := strings.Cut(handle, ":")
	i, err := strconv.Atoi(n)
	if !ok || err != nil || i < 0 || i >= len(p.classes) {
		return 0, "", ErrInvalidReceipt
	}
	return i, h, nil
}

// Delete deletes the message from the class it came from.
func (p *Priority) Delete(ctx context.Context, receiptHandle string) error {
	i, h, err := p.Class(receiptHandle)
	if err != nil {
		return err
	}
	return p.classes[i].Receiver.Delete(ctx, h)
}

// ChangeVisibility changes the message's visibility in the class it came
// from.
func (p *Priority) ChangeVisibility(ctx context.Context, cp ChangeVisibilityParams) error {
	i, h, err := p.Class(cp.ReceiptHandle)
	if err != nil {
		return err
	}
	cp.ReceiptHandle = h
	return p.classes[i].Receiver.ChangeVisibility(ctx, cp)
}

// DeleteBatch deletes the messages from the classes they came from, one
// DeleteAll per class (a batch's messages are of one class when Receive
// returned them). Failed entries are named by the handles given.
func (p *Priority) DeleteBatch(ctx context.Context, handles []string) error {
	if err := CheckHandles(handles); err != nil {
		return err
	}
	byClass := map[int][]string{}
	given := map[string]string{} // the handle given, by class and queue handle
	var failed []EntryError
	var errs []error
	for _, h := range handles {
		i, qh, err := p.Class(h)
		if err != nil {
			failed = append(failed, EntryError{ID: h, Err: err})
			continue
		}
		byClass[i] = append(byClass[i], qh)
		given[strconv.Itoa(i)+":"+qh] = h
	}
	for i, hs := range byClass {
		err := DeleteAll(ctx, p.classes[i].Receiver, hs)
		var be *BatchError
		switch {
		case err == nil:
		case errors.As(err, &be):
			for _, f := range be.Failed {
				failed = append(failed, EntryError{ID: given[strconv.Itoa(i)+":"+f.ID], Err: f.Err})
			}
		default:
			errs = append(errs, fmt.Errorf("class %d: %w", i, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if len(failed) > 0 {
		return &BatchError{Failed: failed}
	}
	return nil
}
