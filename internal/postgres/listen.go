package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// notifyChannel is the channel a send notifies, with the queue's name as
// the payload.
const notifyChannel = "baton_queue"

// listener holds one connection that LISTENs on notifyChannel and wakes
// the long polls waiting on the queue a notification names. A lost
// connection is made again; meanwhile waiters fall back to their poll
// interval, so a notification lost costs latency, never a message.
type listener struct {
	db     *DB
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
}

// wakeups returns the DB's listener, started on first use.
func (d *DB) wakeups() *listener {
	d.listenOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		d.listener = &listener{db: d, cancel: cancel, done: make(chan struct{}), waiters: map[string]map[chan struct{}]struct{}{}}
		go d.listener.run(ctx)
	})
	return d.listener
}

// subscribe returns a channel that receives a value when a message is sent
// to queue (at most one buffered), and the function that unsubscribes.
func (l *listener) subscribe(queue string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	l.mu.Lock()
	if l.waiters[queue] == nil {
		l.waiters[queue] = map[chan struct{}]struct{}{}
	}
	l.waiters[queue][ch] = struct{}{}
	l.mu.Unlock()
	return ch, func() {
		l.mu.Lock()
		delete(l.waiters[queue], ch)
		if len(l.waiters[queue]) == 0 {
			delete(l.waiters, queue)
		}
		l.mu.Unlock()
	}
}

func (l *listener) wake(queue string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ch := range l.waiters[queue] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if err := l.listen(ctx); err == nil || ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// listen holds one LISTEN connection until it fails or ctx ends.
func (l *listener) listen(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, l.db.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		l.wake(n.Payload)
	}
}

func (l *listener) stop() {
	l.cancel()
	<-l.done
}
