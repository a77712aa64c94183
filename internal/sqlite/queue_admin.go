package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strconv"
	"time"
)

// Depth counts the queue's messages at the queue's clock: visible ones
// (including any a receive would dead-letter) and hidden ones (in flight).
func (q *Queue) Depth(ctx context.Context) (visible, inflight int, err error) {
	at := q.now().UnixNano()
	err = q.db.sql.QueryRowContext(ctx, `SELECT COALESCE(SUM(visible_at <= ?), 0), COALESCE(SUM(visible_at > ?), 0)
		FROM messages WHERE queue = ?`, at, at, q.name).Scan(&visible, &inflight)
	if err != nil {
		return 0, 0, fmt.Errorf("depth of %s: %w", q.name, err)
	}
	return visible, inflight, nil
}

// QueuedMessage is a message as Peek shows it.
type QueuedMessage struct {
	MessageID    string
	Body         []byte
	Attributes   map[string]string
	SentAt       time.Time
	ReceiveCount int       // receives in this queue
	VisibleAt    time.Time // zero when never received here; after now while in flight
	MovedFrom    string    // the queue it last moved from ("" if it never moved)
	MovedAt      time.Time
}

// Peek lists up to limit of the queue's messages (all when limit <= 0),
// visible or not, in send order, without receiving them.
func (q *Queue) Peek(ctx context.Context, limit int) ([]QueuedMessage, error) {
	if limit <= 0 {
		limit = -1 // no limit
	}
	rows, err := q.db.sql.QueryContext(ctx, `SELECT id, body, attributes, sent_at, receive_count, visible_at, moved_from, moved_at
		FROM messages WHERE queue = ? ORDER BY id LIMIT ?`, q.name, limit)
	if err != nil {
		return nil, fmt.Errorf("peek at %s: %w", q.name, err)
	}
	defer rows.Close()
	var out []QueuedMessage
	for rows.Next() {
		var m QueuedMessage
		var id, sentAt, visibleAt, movedAt int64
		var attrs string
		if err := rows.Scan(&id, &m.Body, &attrs, &sentAt, &m.ReceiveCount, &visibleAt, &m.MovedFrom, &movedAt); err != nil {
			return nil, fmt.Errorf("peek at %s: %w", q.name, err)
		}
		m.MessageID = strconv.FormatInt(id, 10)
		m.SentAt, m.VisibleAt, m.MovedAt = fromNanos(sentAt), fromNanos(visibleAt), fromNanos(movedAt)
		if m.Attributes, err = decodeAttributes(attrs); err != nil {
			return nil, fmt.Errorf("peek at %s: message %s: %w", q.name, m.MessageID, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("peek at %s: %w", q.name, err)
	}
	return out, nil
}

// MoveTo moves up to max of the queue's visible messages (all of them when
// max <= 0) to dst, in delivery order, in one statement: it redrives a
// dead-letter queue. Each moved message keeps its id, body, attributes and
// send time, is visible at once in dst with a receive count of zero, and
// records this queue and the move time. Messages in flight stay. dst must
// live in the same database file. It returns how many messages moved.
func (q *Queue) MoveTo(ctx context.Context, dst *Queue, max int) (int, error) {
	if filepath.Clean(dst.db.path) != filepath.Clean(q.db.path) {
		return 0, fmt.Errorf("move %s to %s: the queues are in different databases", q.name, dst.name)
	}
	if dst.name == q.name {
		return 0, fmt.Errorf("move %s to itself", q.name)
	}
	if max <= 0 {
		max = -1 // no limit
	}
	at := q.now().UnixNano()
	var res sql.Result
	err := q.db.write(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		res, err = tx.ExecContext(ctx, `UPDATE messages
		SET queue = ?, visible_at = 0, receive_count = 0, receipt = '', moved_from = ?, moved_at = ?
		WHERE id IN (SELECT id FROM messages WHERE queue = ? AND visible_at <= ? ORDER BY visible_at, id LIMIT ?)`,
			dst.name, q.name, at, q.name, at, max)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("move %s to %s: %w", q.name, dst.name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("move %s to %s: %w", q.name, dst.name, err)
	}
	return int(n), nil
}
