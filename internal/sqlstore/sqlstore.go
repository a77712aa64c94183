package sqlstore

import (
	"time"

	"github.com/batonhq/baton/internal/queue"
)

// StoredMessage is a queue's message as the engines' Inspect shows it:
// what Peek shows and where it stands in the queue.
type StoredMessage struct {
	MessageID    string
	Body         []byte
	Attributes   map[string]string
	SentAt       time.Time
	ReceiveCount int       // receives in this queue
	VisibleAt    time.Time // zero when never received here; after now while in flight
	MovedFrom    string    // the queue it last moved from ("" if it never moved)
	MovedAt      time.Time
}

// Peeked returns ms as queue.Peeker shows them.
func Peeked(ms []StoredMessage) []queue.Peeked {
	out := make([]queue.Peeked, len(ms))
	for i, m := range ms {
		out[i] = queue.Peeked{MessageID: m.MessageID, Body: m.Body, Attributes: m.Attributes, ReceiveCount: m.ReceiveCount, SentAt: m.SentAt}
	}
	return out
}
