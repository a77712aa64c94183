package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/sqlstore"
)

// Queue is one named queue in the database. It implements queue.Sender,
// queue.Receiver, queue.BatchDeleter and the operator abilities
// queue.Counter, queue.Peeker and queue.Mover. Any number of Queue values
// for the same name, in any number of processes, may be used at once.
//
// Message ids are the rows' identity (kept when a message moves to
// another queue). Never-received messages are delivered in send order,
// before the messages that became visible again after a receive; there is
// no other ordering guarantee. A message moved to another queue
// (dead-lettered or redriven) starts there with a receive count of zero
// and remembers the queue it came from and when.
type Queue struct {
	db      *DB
	name    string
	nowFunc func() time.Time
	poll    time.Duration
}

var (
	_ queue.Sender       = (*Queue)(nil)
	_ queue.Receiver     = (*Queue)(nil)
	_ queue.BatchDeleter = (*Queue)(nil)
	_ queue.Counter      = (*Queue)(nil)
	_ queue.Peeker       = (*Queue)(nil)
	_ queue.Mover        = (*Queue)(nil)
	_ queue.LargeBatches = (*Queue)(nil)
)

// MaxBatch is the most messages one SendBatch sends, one Receive returns
// and one DeleteBatch deletes (queue.LargeBatches): each is one statement
// whatever the count, so batches larger than SQS's 10 cost no more round
// trips.
const MaxBatch = 100

// MaxBatchSize implements queue.LargeBatches.
func (q *Queue) MaxBatchSize() int { return MaxBatch }

// QueueOptions tune OpenQueue. The zero value (or nil) opens the queue
// with the policy stored for it, if any.
type QueueOptions struct {
	// DeadLetterQueue names the queue that takes a message, on its next
	// receive, once it was received MaxReceives times without being
	// deleted. OpenQueue creates that queue and stores the policy,
	// replacing the queue's previous one, so that every process applies
	// it. Empty keeps the stored policy (none for a new queue).
	DeadLetterQueue string
	// MaxReceives must be positive when DeadLetterQueue is set and zero
	// otherwise.
	MaxReceives int
	// NowFunc is the clock for send times, and for receives and visibility
	// changes whose params carry no Now. Nil means time.Now.
	NowFunc func() time.Time
	// PollInterval is how often a long poll looks for messages when no
	// notification woke it; 0 means one second.
	PollInterval time.Duration
	// NoCreate opens a queue that must exist (an operator's read or
	// redrive): nothing is created, and a missing queue is an error
	// matching queue.ErrNotFound.
	NoCreate bool
}

// OpenQueue opens the queue called name in db, creating it if needed (and
// its dead-letter queue, when o names one).
func OpenQueue(ctx context.Context, db *DB, name string, o *QueueOptions) (*Queue, error) {
	q := &Queue{db: db, name: name, nowFunc: time.Now, poll: time.Second}
	var dlq string
	var maxReceives int
	noCreate := false
	if o != nil {
		dlq, maxReceives, noCreate = o.DeadLetterQueue, o.MaxReceives, o.NoCreate
		if o.NowFunc != nil {
			q.nowFunc = o.NowFunc
		}
		if o.PollInterval > 0 {
			q.poll = o.PollInterval
		}
	}
	if err := sqlstore.CheckQueueOpen(name, dlq, maxReceives); err != nil {
		return nil, err
	}
	if noCreate {
		if _, _, err := q.DeadLetterPolicy(ctx); err != nil {
			return nil, fmt.Errorf("open queue %s: %w", name, err)
		}
		return q, nil
	}
	at := toNanos(q.nowFunc())
	// Idempotent (an insert that does nothing on conflict, an update to the
	// same values): a transaction cut by a lost connection is run again.
	err := db.retry(ctx, nil, func() error {
		return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
			for _, n := range []string{name, dlq} {
				if n == "" {
					continue
				}
				if _, err := tx.Exec(ctx, `INSERT INTO baton_queues (name, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`, n, at); err != nil {
					return fmt.Errorf("create %s: %w", n, err)
				}
			}
			if dlq != "" {
				if _, err := tx.Exec(ctx, `UPDATE baton_queues SET dead_letter = $1, max_receives = $2 WHERE name = $3`, dlq, maxReceives, name); err != nil {
					return fmt.Errorf("store dead-letter policy: %w", err)
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("open queue %s: %w", name, translate(err))
	}
	return q, nil
}

// Name is the queue's name.
func (q *Queue) Name() string { return q.name }

// DeadLetterPolicy returns the stored dead-letter queue and maximum
// receive count, or "" and 0 when the queue has none; queue.ErrNotFound
// when the queue does not exist.
func (q *Queue) DeadLetterPolicy(ctx context.Context) (deadLetter string, maxReceives int, err error) {
	err = q.db.queryRow(ctx, nil, `SELECT dead_letter, max_receives FROM baton_queues WHERE name = $1`, q.name).Scan(&deadLetter, &maxReceives)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, fmt.Errorf("dead-letter policy of %s: %w", q.name, queue.ErrNotFound)
	}
	if err != nil {
		return "", 0, fmt.Errorf("dead-letter policy of %s: %w", q.name, translate(err))
	}
	return deadLetter, maxReceives, nil
}

// sqlSend stores the batch (arrays of bodies, attributes and visible-at
// times, 0 for at once) unless the
// queue does not exist, and notifies the queue's channel, in one
// statement: every entry is sent or none is.
const sqlSend = `
WITH q AS (SELECT name FROM baton_queues WHERE name = $1),
ins AS (
	INSERT INTO baton_messages (queue, body, attributes, sent_at, visible_at)
	SELECT q.name, m.body, m.attributes, $2, m.visible_at FROM q, unnest($3::bytea[], $4::text[], $5::bigint[]) AS m(body, attributes, visible_at)
	RETURNING 1
)
SELECT (SELECT count(*) FROM ins), (SELECT count(*) FROM q), pg_notify('` + notifyChannel + `', $1)`

// SendBatch stores msgs (up to MaxBatch) in one statement: every entry is sent or none is,
// so it never returns a *queue.BatchError. A send cut by a lost
// connection after it reached the server is sent again, and may then be
// stored twice: the queue's delivery is at least once, as SQS's is, and
// consumers take a duplicate for what it is (the item's claim).
func (q *Queue) SendBatch(ctx context.Context, msgs []queue.Message) error {
	if err := queue.CheckBatchUpTo(msgs, MaxBatch); err != nil {
		return fmt.Errorf("send to %s: %w", q.name, err)
	}
	now := q.nowFunc()
	bodies := make([][]byte, len(msgs))
	attrs := make([]string, len(msgs))
	visible := make([]int64, len(msgs)) // 0: visible at once
	for i, m := range msgs {
		if m.Delay > 0 {
			visible[i] = toNanos(now.Add(m.Delay))
		}
		a, err := encodeAttributes(m.Attributes)
		if err != nil {
			return fmt.Errorf("send to %s: entry %s: %w", q.name, m.ID, err)
		}
		bodies[i], attrs[i] = m.Body, a
		if bodies[i] == nil {
			bodies[i] = []byte{}
		}
	}
	var sent, exists int
	err := q.db.queryRow(ctx, nil, sqlSend, q.name, toNanos(now), bodies, attrs, visible).Scan(&sent, &exists, nil)
	if err != nil {
		return fmt.Errorf("send to %s: %w", q.name, translate(err))
	}
	if exists == 0 {
		return fmt.Errorf("send to %s: %w", q.name, queue.ErrNotFound)
	}
	if sent != len(msgs) {
		return fmt.Errorf("send to %s: %d of %d messages stored", q.name, sent, len(msgs))
	}
	return nil
}

// sqlReceive picks up to $3 messages visible at $2 in delivery order,
// skipping those another receive holds, leaving out ids in $6; it hides
// them until $4 under receipt handles $5||id and counts the receive, and
// moves those that reached the dead-letter policy to the dead-letter queue
// instead. Its first row says whether the queue exists ('q'); then one row
// per message taken ('t') and per message dead-lettered ('d').
const sqlReceive = `
WITH q AS (SELECT dead_letter, max_receives FROM baton_queues WHERE name = $1),
cand AS (
	SELECT m.id, (q.max_receives > 0 AND m.receive_count >= q.max_receives) AS dead
	FROM baton_messages m, q
	WHERE m.queue = $1 AND m.visible_at <= $2 AND m.id <> ALL ($6::bigint[])
	ORDER BY m.visible_at, m.id
	LIMIT $3
	FOR UPDATE OF m SKIP LOCKED
),
dead AS (
	UPDATE baton_messages m SET queue = q.dead_letter, visible_at = 0, receive_count = 0, receipt = '',
		moved_from = $1, moved_at = $2
	FROM cand, q WHERE m.id = cand.id AND cand.dead
	RETURNING m.id
),
taken AS (
	UPDATE baton_messages m SET visible_at = $4, receive_count = m.receive_count + 1, receipt = $5 || m.id
	FROM cand WHERE m.id = cand.id AND NOT cand.dead
	RETURNING m.id, m.receipt, m.body, m.attributes, m.sent_at, m.receive_count
)
SELECT 'q', 0::bigint, '', NULL::bytea, '', 0::bigint, 0 FROM q
UNION ALL SELECT 't', id, receipt, body, attributes, sent_at, receive_count FROM taken
UNION ALL SELECT 'd', id, '', NULL, '', 0, 0 FROM dead`

// Receive returns up to p.Max (at most MaxBatch) visible messages, hiding each until
// p.Now+p.Visibility. A zero p.Now means the queue's clock. A long poll
// (p.Wait > 0) looks again when a message is sent to the queue (LISTEN)
// or every PollInterval, until a message is visible, Wait has passed or
// ctx is done; its later looks use p.Now plus the time waited. On ctx's
// end it returns ctx's error. A queue that does not exist fails at once
// with queue.ErrNotFound.
func (q *Queue) Receive(ctx context.Context, p queue.ReceiveParams) ([]queue.Delivery, error) {
	poll := sqlstore.LongPoll{Queue: q.name, MaxBatch: MaxBatch, NowFunc: q.nowFunc, Interval: q.poll,
		SubscribeFunc: func() (<-chan struct{}, func()) { return q.db.wakeups().subscribe(q.name) }}
	return poll.Receive(ctx, p, q.receiveOnce)
}

// receiveOnce is one look for visible messages at now. Messages it
// dead-letters leave room for others: it looks again until it has max
// messages or found no more. A look cut by a lost connection is made
// again: messages the lost one took, if it applied, are hidden until the
// visibility timeout, then delivered again (their receive counted once
// more), as after a consumer's crash.
func (q *Queue) receiveOnce(ctx context.Context, max int, visibility time.Duration, now time.Time) ([]queue.Delivery, error) {
	at := toNanos(now)
	prefix := sqlstore.ReceiptPrefix()
	var out []queue.Delivery
	seen := []int64{}
	for len(out) < max {
		type row struct {
			kind, receipt, attrs string
			body                 []byte
			id, sentAt           int64
			count                int
		}
		var rows []row
		err := q.db.retry(ctx, nil, func() error {
			rs, err := q.db.pool.Query(ctx, sqlReceive, q.name, at, max-len(out), at+int64(visibility), prefix, seen)
			if err != nil {
				return err
			}
			defer rs.Close()
			rows = rows[:0]
			var r row // every row scanned into the same destinations
			dest := scanInPlace([]any{&r.kind, &r.id, &r.receipt, &r.body, &r.attrs, &r.sentAt, &r.count})
			for rs.Next() {
				if err := rs.Scan(dest...); err != nil {
					return err
				}
				rows = append(rows, r)
			}
			return rs.Err()
		})
		if err != nil {
			return nil, fmt.Errorf("receive from %s: %w", q.name, translate(err))
		}
		exists, took, dead := false, 0, 0
		for _, r := range rows {
			switch r.kind {
			case "q":
				exists = true
			case "d":
				dead++
			case "t":
				took++
				seen = append(seen, r.id)
				d := queue.Delivery{MessageID: strconv.FormatInt(r.id, 10), ReceiptHandle: r.receipt, Body: r.body,
					ReceiveCount: r.count, SentAt: fromNanos(r.sentAt)}
				if d.Attributes, err = sqlstore.DecodeAttributes(r.attrs); err != nil {
					return nil, fmt.Errorf("receive from %s: message %s: %w", q.name, d.MessageID, err)
				}
				out = append(out, d)
			}
		}
		if !exists {
			return nil, fmt.Errorf("receive from %s: %w", q.name, queue.ErrNotFound)
		}
		if dead == 0 || took+dead == 0 {
			break // only dead letters leave room for more
		}
	}
	return out, nil
}

// Delete removes the message last received with receiptHandle. It returns
// queue.ErrInvalidReceipt when the handle is not the latest of a message
// in this queue. A delete re-run after its first run applied finds the
// message gone; it reports success then (the message is deleted either
// way, and the handle can no longer be anyone else's).
func (q *Queue) Delete(ctx context.Context, receiptHandle string) error {
	id, ok := sqlstore.ReceiptID(receiptHandle)
	if !ok {
		return fmt.Errorf("delete from %s: %w", q.name, queue.ErrInvalidReceipt)
	}
	var a attempts
	tag, err := q.db.exec(ctx, &a, `DELETE FROM baton_messages WHERE id = $1 AND queue = $2 AND receipt = $3`, id, q.name, receiptHandle)
	if err != nil {
		return fmt.Errorf("delete from %s: %w", q.name, translate(err))
	}
	if tag.RowsAffected() == 0 && !a.unsure {
		return fmt.Errorf("delete from %s: %w", q.name, queue.ErrInvalidReceipt)
	}
	return nil
}

// DeleteBatch removes the messages last received with handles (up to
// MaxBatch) in one statement (see queue.BatchDeleter). The handles that are not the latest
// of a message in this queue fail with queue.ErrInvalidReceipt, except
// after a re-run whose first run may have deleted them (as Delete).
func (q *Queue) DeleteBatch(ctx context.Context, handles []string) error {
	if err := queue.CheckHandlesUpTo(handles, MaxBatch); err != nil {
		return fmt.Errorf("delete batch from %s: %w", q.name, err)
	}
	ids := sqlstore.ReceiptIDs(handles)
	deleted := make(map[string]bool, len(handles))
	var a attempts
	if len(ids) > 0 {
		err := q.db.retry(ctx, &a, func() error {
			rows, err := q.db.pool.Query(ctx, `DELETE FROM baton_messages WHERE id = ANY ($1) AND queue = $2 AND receipt = ANY ($3) RETURNING receipt`,
				ids, q.name, handles)
			if err != nil {
				return err
			}
			defer rows.Close()
			var receipt string
			for rows.Next() {
				if err := rows.Scan(&receipt); err != nil {
					return err
				}
				deleted[receipt] = true
			}
			return rows.Err()
		})
		if err != nil {
			return fmt.Errorf("delete batch from %s: %w", q.name, translate(err))
		}
	}
	if err := sqlstore.DeleteOutcome(handles, deleted, a.unsure); err != nil {
		return fmt.Errorf("delete batch from %s: %w", q.name, err)
	}
	return nil
}

// ChangeVisibility hides the message last received with p.ReceiptHandle
// until p.Now+p.Timeout (a zero p.Now means the queue's clock). Errors as
// Delete.
func (q *Queue) ChangeVisibility(ctx context.Context, p queue.ChangeVisibilityParams) error {
	id, until, err := sqlstore.VisibilityChange(p, q.nowFunc)
	if err != nil {
		return fmt.Errorf("change visibility in %s: %w", q.name, err)
	}
	// Idempotent: a re-run sets the same visibility.
	tag, err := q.db.exec(ctx, nil, `UPDATE baton_messages SET visible_at = $1 WHERE id = $2 AND queue = $3 AND receipt = $4`,
		until.UnixNano(), id, q.name, p.ReceiptHandle)
	if err != nil {
		return fmt.Errorf("change visibility in %s: %w", q.name, translate(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("change visibility in %s: %w", q.name, queue.ErrInvalidReceipt)
	}
	return nil
}

// encodeAttributes is sqlstore.EncodeAttributes, refusing NUL bytes too.
func encodeAttributes(m map[string]string) (string, error) {
	for k, v := range m {
		if strings.IndexByte(k, 0) >= 0 || strings.IndexByte(v, 0) >= 0 {
			return "", fmt.Errorf("attribute %q: contains a NUL byte, which PostgreSQL text cannot hold", k)
		}
	}
	return sqlstore.EncodeAttributes(m)
}
