package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/sqlstore"
)

// Depth counts the queue's messages at the queue's clock, exactly: visible
// ones (including any a receive would dead-letter) and hidden ones (in
// flight). Nothing is ever delayed.
func (q *Queue) Depth(ctx context.Context) (queue.Depth, error) {
	at := q.nowFunc().UnixNano()
	var d queue.Depth
	err := q.db.queryRow(ctx, nil, `SELECT count(*) FILTER (WHERE visible_at <= $1), count(*) FILTER (WHERE visible_at > $1)
		FROM baton_messages WHERE queue = $2`, at, q.name).Scan(&d.Visible, &d.InFlight)
	if err != nil {
		return queue.Depth{}, fmt.Errorf("depth of %s: %w", q.name, translate(err))
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
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	out, err := queryAll(ctx, q.db, `SELECT `+sqlstore.StoredMessageColumns+`
		FROM baton_messages WHERE queue = $1 ORDER BY id LIMIT $2`, []any{q.name, lim},
		func(rows pgx.Rows) (StoredMessage, error) { return sqlstore.ScanStoredMessage(rows.Scan) })
	if err != nil {
		return nil, fmt.Errorf("peek at %s: %w", q.name, translate(err))
	}
	return out, nil
}

// MoveTo moves up to max of the queue's visible messages (all when max <=
// 0) to dst, in delivery order, and returns how many moved: it redrives a
// dead-letter queue. When dst is a queue of the same database the move is
// one statement (which notifies dst's consumers): each moved message keeps
// its id, body, attributes and send time, is visible at once in dst with a
// receive count of zero, and records this queue and the move time.
// Messages in flight stay. Any other dst gets the messages through
// queue.MoveByReceiving.
func (q *Queue) MoveTo(ctx context.Context, dst queue.Sender, max int) (int, error) {
	d, ok := dst.(*Queue)
	if !ok || d.db.pool != q.db.pool {
		return queue.MoveByReceiving(ctx, q, dst, max)
	}
	if d.name == q.name {
		return 0, fmt.Errorf("move %s to itself", q.name)
	}
	var lim *int
	if max > 0 {
		lim = &max
	}
	at := q.nowFunc().UnixNano()
	var n int
	// Sent once: a re-run after an unknown outcome would move max more.
	err := q.db.queryRow(ctx, &attempts{sendOnce: lim != nil}, `
WITH moved AS (
	UPDATE baton_messages SET queue = $1, visible_at = 0, receive_count = 0, receipt = '', moved_from = $2, moved_at = $3
	WHERE id IN (SELECT id FROM baton_messages WHERE queue = $2 AND visible_at <= $3 ORDER BY visible_at, id LIMIT $4 FOR UPDATE SKIP LOCKED)
	RETURNING 1
)
SELECT count(*), pg_notify('`+notifyChannel+`', $1) FROM moved`, d.name, q.name, at, lim).Scan(&n, nil)
	if err != nil {
		return 0, fmt.Errorf("move %s to %s: %w", q.name, d.name, translate(err))
	}
	return n, nil
}
