package sqlstore

import (
	"context"
	"fmt"
	"strconv"
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

// Inspector is a queue whose stored messages an operator can read: the
// SQL engines' Queue.
type Inspector interface {
	// Inspect returns up to limit of the queue's messages (all when
	// limit <= 0), visible or not, in send order, receiving none.
	Inspect(ctx context.Context, limit int) ([]StoredMessage, error)
}

// Peek implements queue.Peeker over q's Inspect: up to max of the
// queue's messages (all when max <= 0), visible or not, in send order,
// without receiving them.
func Peek(ctx context.Context, q Inspector, max int) ([]queue.Peeked, error) {
	ms, err := q.Inspect(ctx, max)
	if err != nil {
		return nil, err
	}
	out := make([]queue.Peeked, len(ms))
	for i, m := range ms {
		out[i] = queue.Peeked{MessageID: m.MessageID, Body: m.Body, Attributes: m.Attributes, ReceiveCount: m.ReceiveCount, SentAt: m.SentAt}
	}
	return out, nil
}

// StoredMessageColumns are the columns of a message that
// ScanStoredMessage reads, in its order.
const StoredMessageColumns = `id, body, attributes, sent_at, receive_count, visible_at, moved_from, moved_at`

// ScanStoredMessage scans StoredMessageColumns.
func ScanStoredMessage(scan ScanFunc) (StoredMessage, error) {
	var m StoredMessage
	var id, sentAt, visibleAt, movedAt int64
	var attrs string
	if err := scan(&id, &m.Body, &attrs, &sentAt, &m.ReceiveCount, &visibleAt, &m.MovedFrom, &movedAt); err != nil {
		return StoredMessage{}, err
	}
	m.MessageID = strconv.FormatInt(id, 10)
	m.SentAt, m.VisibleAt, m.MovedAt = Time(sentAt), Time(visibleAt), Time(movedAt)
	var err error
	if m.Attributes, err = DecodeAttributes(attrs); err != nil {
		return StoredMessage{}, fmt.Errorf("message %s: %w", m.MessageID, err)
	}
	return m, nil
}
