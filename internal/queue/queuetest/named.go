package queuetest

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/internal/queue"
)

// NamedQueue is a queue an adapter opens by name: both its ends.
type NamedQueue interface {
	queue.Sender
	queue.Receiver
	Name() string
}

// Named makes a harness's queues for a backend whose queues are opened
// by name in one shared database (the SQL engines): queues q1, q2, …,
// each with the dead-letter queue "<name>-dlq" when the case sets
// MaxReceives.
type Named struct {
	// OpenFunc opens the queue name, creating it, with deadLetter as its
	// dead-letter queue after maxReceives receives when deadLetter is not
	// empty; it fails t on error.
	OpenFunc func(t *testing.T, name, deadLetter string, maxReceives int) NamedQueue
	// DropFunc deletes the queue name as another process would.
	DropFunc func(t *testing.T, name string)

	next atomic.Int64
}

// NewQueue implements Harness.NewQueue.
func (n *Named) NewQueue(t *testing.T, o QueueOptions) Queue {
	name := fmt.Sprintf("q%d", n.next.Add(1))
	if o.MaxReceives == 0 {
		q := n.OpenFunc(t, name, "", 0)
		return Queue{Sender: q, Receiver: q}
	}
	q := n.OpenFunc(t, name, name+"-dlq", o.MaxReceives)
	dlq := n.OpenFunc(t, name+"-dlq", "", 0)
	return Queue{Sender: q, Receiver: q, DeadLetters: dlq, DeadLetterSender: dlq}
}

// NewNonexistentQueue implements Harness.NewNonexistentQueue: it opens a
// queue and drops it, keeping the handle.
func (n *Named) NewNonexistentQueue(t *testing.T) Queue {
	q := n.OpenFunc(t, fmt.Sprintf("gone%d", n.next.Add(1)), "", 0)
	n.DropFunc(t, q.Name())
	return Queue{Sender: q, Receiver: q}
}
