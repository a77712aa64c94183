package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"

	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/sqlstore"
)

var (
	_ queue.Counter = (*Queue)(nil)
	_ queue.Peeker  = (*Queue)(nil)
	_ queue.Mover   = (*Queue)(nil)
)

// Depth counts the queue's messages at the queue's clock, exactly: visible
// ones (including any a receive would dead-letter) and hidden ones (in
// flight). Nothing is ever delayed.
func (q *Queue) Depth(ctx context.Context) (queue.Depth, error) {
	at := q.nowFunc().UnixNano()
	var d queue.Depth
	err := q.db.sql.QueryRowContext(ctx, `SELECT COALESCE(SUM(visible_at <= ?), 0), COALESCE(SUM(visible_at > ?), 0)
		FROM messages WHERE queue = ?`, at, at, q.name).Scan(&d.Visible, &d.InFlight)
	if err != nil {
		return queue.Depth{}, fmt.Errorf("depth of %s: %w", q.name, err)
	}
	return d, nil
}

// StoredMessage is a message as Inspect shows it (sqlstore.StoredMessage).
type StoredMessage = sqlstore.StoredMessage

// Peek lists up to max of the queue's messages (all when max <= 0),
// visible or not, in send order, without receiving them: it counts no
// receive and hides nothing.
func (q *Queue) Peek(ctx context.Context, max int) ([]queue.Peeked, error) {
	return sqlstore.Peek(ctx, q, max)
}

// Inspect is Peek with each message's visibility and last move.
func (q *Queue) Inspect(ctx context.Context, limit int) ([]StoredMessage, error) {
	if limit <= 0 {
		limit = -1 // no limit
	}
	rows, err := q.db.sql.QueryContext(ctx, `SELECT `+sqlstore.StoredMessageColumns+`
		FROM messages WHERE queue = ? ORDER BY id LIMIT ?`, q.name, limit)
	if err != nil {
		return nil, fmt.Errorf("peek at %s: %w", q.name, err)
	}
	defer rows.Close()
	var out []StoredMessage
	for rows.Next() {
		m, err := sqlstore.ScanStoredMessage(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("peek at %s: %w", q.name, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("peek at %s: %w", q.name, err)
	}
	return out, nil
}

// MoveTo moves up to max of the queue's visible messages (all of them
// when max <= 0) to dst, in delivery order, and returns how many moved: it
// redrives a dead-letter queue. When dst is a queue of the same database
// file the move is one statement: each moved message keeps its id, body,
// attributes and send time, is visible at once in dst with a receive count
// of zero, and records this queue and the move time (Inspect shows them).
// Messages in flight stay. Any other dst gets the messages through
// queue.MoveByReceiving (with new ids there).
func (q *Queue) MoveTo(ctx context.Context, dst queue.Sender, max int) (int, error) {
	d, ok := dst.(*Queue)
	if !ok || filepath.Clean(d.db.path) != filepath.Clean(q.db.path) {
		return queue.MoveByReceiving(ctx, q, dst, max)
	}
	return q.moveWithin(ctx, d, max)
}

// moveWithin is MoveTo within one database file.
func (q *Queue) moveWithin(ctx context.Context, dst *Queue, max int) (int, error) {
	if dst.name == q.name {
		return 0, fmt.Errorf("move %s to itself", q.name)
	}
	if max <= 0 {
		max = -1 // no limit
	}
	at := q.nowFunc().UnixNano()
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
