package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/sqlstore"
)

// Receive returns up to p.Max visible messages, hiding each until
// p.Now+p.Visibility. A zero p.Now means the queue's clock. A long poll
// (p.Wait > 0) looks again every PollInterval until a message is visible,
// Wait has passed or ctx is done; its later looks use p.Now plus the time
// waited. On ctx's end it returns ctx's error. A queue that does not exist
// fails at once with queue.ErrNotFound.
func (q *Queue) Receive(ctx context.Context, p queue.ReceiveParams) ([]queue.Delivery, error) {
	poll := sqlstore.LongPoll{Queue: q.name, MaxBatch: queue.MaxBatch, NowFunc: q.nowFunc, Interval: q.poll}
	return poll.Receive(ctx, p, q.receiveOnce)
}

// receiveOnce is one look for visible messages at now.
func (q *Queue) receiveOnce(ctx context.Context, max int, visibility time.Duration, now time.Time) ([]queue.Delivery, error) {
	at := now.UnixNano()
	st, err := q.prepared(ctx, sqlAnyVisible, sqlPolicy, sqlVisible, sqlTake)
	if err != nil {
		return nil, fmt.Errorf("receive from %s: %w", q.name, err)
	}
	// A plain read first, so that idle polls take no write: unless the
	// queue was busy a moment ago. It also finds a queue that does not
	// exist (the write would too).
	if !q.busy.Load() {
		var visible bool
		err = st[0].QueryRowContext(ctx, q.name, at).Scan(&visible)
		if errors.Is(err, sql.ErrNoRows) {
			err = queue.ErrNotFound
		}
		if err != nil {
			return nil, fmt.Errorf("receive from %s: %w", q.name, err)
		}
		if !visible {
			return nil, nil
		}
	}
	taken, err := q.take(ctx, st[1:], max, at, at+int64(visibility))
	if err != nil {
		return nil, fmt.Errorf("receive from %s: %w", q.name, err)
	}
	q.busy.Store(len(taken) == max)
	// Decoded once the write is over, off the writer.
	out := make([]queue.Delivery, len(taken))
	for i, t := range taken {
		out[i] = t.Delivery
		if out[i].Attributes, err = sqlstore.DecodeAttributes(t.attrs); err != nil {
			return nil, fmt.Errorf("receive from %s: message %s: %w", q.name, t.MessageID, err)
		}
	}
	return out, nil
}

// takenMessage is a delivery with its attributes still encoded.
type takenMessage struct {
	queue.Delivery
	attrs string
}

// take hides up to max messages visible at at until visibleAt, in one
// all-or-nothing write, and returns them in delivery order. A message
// that reached the queue's dead-letter policy is moved instead. st holds
// the prepared sqlPolicy, sqlVisible and sqlTake.
func (q *Queue) take(ctx context.Context, st []*sql.Stmt, max int, at, visibleAt int64) ([]takenMessage, error) {
	var out []takenMessage
	err := q.db.writeAtomic(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		out, err = q.takeIn(ctx, tx, st, max, at, visibleAt)
		return err
	})
	return out, err
}

// takeIn is take's write, in tx.
func (q *Queue) takeIn(ctx context.Context, tx *sql.Tx, st []*sql.Stmt, max int, at, visibleAt int64) ([]takenMessage, error) {
	var dlq string
	var maxReceives int
	err := tx.StmtContext(ctx, st[0]).QueryRowContext(ctx, q.name).Scan(&dlq, &maxReceives)
	if errors.Is(err, sql.ErrNoRows) {
		err = queue.ErrNotFound
	}
	if err != nil {
		return nil, err
	}

	var out []takenMessage
	// With Visibility 0 a taken message stays visible: skip it. Max
	// candidates are enough, as the taken ones are fewer than Max.
	taken := map[int64]bool{}
	visible, takeSt := tx.StmtContext(ctx, st[1]), tx.StmtContext(ctx, st[2])
	for len(out) < max {
		cands, err := visibleMessages(ctx, visible, q.name, at, max)
		if err != nil {
			return nil, err
		}
		var takeIDs, deadIDs []int64
		for _, c := range cands {
			if taken[c.id] {
				continue
			}
			if len(out)+len(takeIDs) == max {
				break
			}
			if maxReceives > 0 && c.receiveCount >= maxReceives {
				deadIDs = append(deadIDs, c.id)
				continue
			}
			takeIDs = append(takeIDs, c.id)
		}
		if len(takeIDs)+len(deadIDs) == 0 {
			break
		}
		if len(deadIDs) > 0 {
			if err := moveMessages(ctx, tx, deadIDs, q.name, dlq, at); err != nil {
				return nil, fmt.Errorf("dead-letter messages %v to %s: %w", deadIDs, dlq, err)
			}
		}
		if len(takeIDs) > 0 {
			ms, err := takeMessages(ctx, takeSt, takeIDs, visibleAt)
			if err != nil {
				return nil, fmt.Errorf("messages %v: %w", takeIDs, err)
			}
			for _, id := range takeIDs {
				taken[id] = true
			}
			out = append(out, ms...)
		}
		if len(cands) < max {
			break // no other message is visible
		}
	}
	return out, nil
}

type candidate struct {
	id           int64
	receiveCount int
}

// visibleMessages lists up to limit messages of the queue visible at at,
// in delivery order.
func visibleMessages(ctx context.Context, st *sql.Stmt, name string, at int64, limit int) ([]candidate, error) {
	rows, err := st.QueryContext(ctx, name, at, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []candidate
	for rows.Next() {
		var c candidate
		if err := rows.Scan(&c.id, &c.receiveCount); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// idList is ids as the JSON array that json_each reads.
func idList(ids []int64) string {
	b := make([]byte, 0, 1+len(ids)*8)
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, ']'))
}

// takeMessages hides messages ids until visibleAt under fresh receipt
// handles, with st, the prepared sqlTake: one statement for the lot. It
// returns them in the order of ids.
func takeMessages(ctx context.Context, st *sql.Stmt, ids []int64, visibleAt int64) ([]takenMessage, error) {
	rows, err := st.QueryContext(ctx, visibleAt, sqlstore.ReceiptPrefix(), idList(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byID := make(map[int64]takenMessage, len(ids))
	for rows.Next() {
		var id, sentAt int64
		var m takenMessage
		if err := rows.Scan(&id, &m.ReceiptHandle, &m.Body, &m.attrs, &sentAt, &m.ReceiveCount); err != nil {
			return nil, err
		}
		m.MessageID, m.SentAt = strconv.FormatInt(id, 10), fromNanos(sentAt)
		byID[id] = m
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]takenMessage, 0, len(ids))
	for _, id := range ids {
		m, ok := byID[id]
		if !ok { // the transaction holds the write lock: never happens
			return nil, fmt.Errorf("message %d vanished under the receive", id)
		}
		out = append(out, m)
	}
	return out, nil
}

// moveMessages moves messages ids from queue src to dst, visible at once,
// with their receive counts reset and their receipt handles voided.
func moveMessages(ctx context.Context, tx *sql.Tx, ids []int64, src, dst string, at int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE messages SET queue = ?, visible_at = 0, receive_count = 0, receipt = '', moved_from = ?, moved_at = ?
		WHERE id IN (SELECT value FROM json_each(?))`, dst, src, at, idList(ids))
	return err
}
