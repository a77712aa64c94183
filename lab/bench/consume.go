package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
)

// consumers runs an engine's pollers and counts what the consumer did,
// until stopped.
type consumers struct {
	want int // succeeded items to wait for

	mu        sync.Mutex
	statuses  map[string]int
	succeeded int
	lastDone  time.Time
	// lastExpanded is when the last shard message was expanded; batches
	// and busy count the batches handled and the time they took; timed
	// sums each batch's timing (its calls, on an AWS target).
	lastExpanded time.Time
	batches      int
	busy         time.Duration
	timed        invocations
	done         chan struct{} // closed once want items succeeded, or the run finished (ended)
	doneOnce     sync.Once

	stopFunc func()
	wg       sync.WaitGroup
}

// consume starts e's pollers with pollers workers, each taking batches of
// batch messages, and returns once they run. want is the number of
// succeeded items Wait waits for.
func consume(ctx context.Context, e *exec.Runtime, pollers, batch, want int) *consumers {
	c := &consumers{want: want, statuses: map[string]int{}, done: make(chan struct{})}
	p := e.Poller()
	p.Concurrency, p.BatchSize = pollers, batch
	p.HandleFunc = func(ctx context.Context, deadline time.Time, msgs []queue.Delivery) []string {
		ct := &callTimes{}
		start := time.Now()
		res := e.Consumer.Handle(withCallTimes(ctx, ct), deadline, msgs)
		end := time.Now()
		c.record(res, end.Sub(start), timing(start, end, ct))
		failed := make([]string, len(res.Failed))
		for i, f := range res.Failed {
			failed[i] = f.MessageID
		}
		return failed
	}
	ctx, c.stopFunc = context.WithCancel(ctx)
	c.wg.Go(func() { _ = p.Run(ctx) })
	return c
}

func (c *consumers) record(res consumer.Result, took time.Duration, inv invocation) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batches++
	c.busy += took
	c.timed.add(inv)
	for _, it := range res.Outcomes() {
		c.statuses[it.Status]++
		if it.Status == consumer.StatusExpanded {
			c.lastExpanded = now
		}
		if it.Status == consumer.StatusSucceeded {
			c.succeeded++
			c.lastDone = now
			if c.succeeded == c.want {
				c.doneOnce.Do(func() { close(c.done) })
			}
		}
	}
}

// Wait waits until want items succeeded, and returns when the last one
// was reported (after its batch). It fails when ctx ends first.
func (c *consumers) Wait(ctx context.Context) (time.Time, error) {
	select {
	case <-c.done:
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.lastDone, nil
	case <-ctx.Done():
		c.mu.Lock()
		defer c.mu.Unlock()
		return time.Time{}, fmt.Errorf("%d of %d items succeeded (statuses %v): %w", c.succeeded, c.want, c.statuses, ctx.Err())
	}
}

// ended ends Wait: the run finished (its items all ended) though fewer
// than want successes were reported, as when a completion whose reply was
// lost is reported failed and its item's next delivery is a duplicate.
// The run's finish at is then the last item's end.
func (c *consumers) ended(at time.Time) {
	c.mu.Lock()
	if at.After(c.lastDone) {
		c.lastDone = at
	}
	c.mu.Unlock()
	c.doneOnce.Do(func() { close(c.done) })
}

// Succeeded returns how many items succeeded so far and when the last
// one was reported (after its batch).
func (c *consumers) Succeeded() (int, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.succeeded, c.lastDone
}

// Stop stops the pollers; batches in flight finish.
func (c *consumers) Stop() {
	c.stopFunc()
	c.wg.Wait()
}

// Statuses returns the count of each consumer status so far.
func (c *consumers) Statuses() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.statuses))
	for k, v := range c.statuses {
		out[k] = v
	}
	return out
}

// checkSucceeded reads the run's items and fails unless exactly want of
// them exist, all SUCCEEDED.
func checkSucceeded(ctx context.Context, l ledger.Store, run ledger.RunID, want int) ([]ledger.Item, error) {
	items, err := l.ListItems(ctx, run)
	if err != nil {
		return nil, fmt.Errorf("list items of %s: %w", run, err)
	}
	ok := 0
	for _, it := range items {
		if it.State == ledger.ItemSucceeded {
			ok++
		}
	}
	if len(items) != want || ok != want {
		return items, fmt.Errorf("run %s: %d items, %d SUCCEEDED, want %d", run, len(items), ok, want)
	}
	return items, nil
}
