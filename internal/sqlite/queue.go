package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/sqlstore"
)

// Queue is one named queue in the database. It implements queue.Sender and
// queue.Receiver. Any number of Queue values for the same name, in one
// process or several sharing the file, may be used at once: every receive
// hides the messages it returns in one all-or-nothing write, so no two
// receivers get a message while it is hidden.
//
// Message ids are the row ids (kept when a message moves to another
// queue). Never-received messages are delivered in send order, before the
// messages that became visible again after a receive; there is no other
// ordering guarantee. A message moved to another queue (dead-lettered or
// redriven) starts there with a receive count of zero and remembers the
// queue it came from and when.
type Queue struct {
	db      *DB
	name    string
	nowFunc func() time.Time
	poll    time.Duration

	mu    sync.Mutex
	stmts map[string]*sql.Stmt // prepared on first use, by query text

	// busy: the latest receive found as many messages as it could take, so
	// the next one skips the read that keeps idle polls off the writer.
	busy atomic.Bool
}

// The statements of the hot paths, prepared once per Queue: parsing costs
// about as much as running them. A receipt handle is a random prefix
// (one per receive) and the message id, so that every statement on a
// handle finds its message by id (NOT INDEXED: by id, not by queue).
const (
	// sqlAnyVisible has no row when the queue does not exist, else 1 when
	// a message is visible and 0 when none is.
	sqlAnyVisible = `SELECT EXISTS (SELECT 1 FROM messages WHERE queue = ?1 AND visible_at <= ?2) FROM queues WHERE name = ?1`
	sqlPolicy     = `SELECT dead_letter, max_receives FROM queues WHERE name = ?`
	sqlVisible    = `SELECT id, receive_count FROM messages WHERE queue = ? AND visible_at <= ? ORDER BY visible_at, id LIMIT ?`
	sqlTake       = `UPDATE messages SET visible_at = ?1, receive_count = receive_count + 1, receipt = ?2 || id
		WHERE id IN (SELECT value FROM json_each(?3)) RETURNING id, receipt, body, attributes, sent_at, receive_count`
	sqlDelete           = `DELETE FROM messages WHERE id = ? AND queue = ? AND receipt = ?`
	sqlDeleteBatch      = `DELETE FROM messages NOT INDEXED WHERE id IN (SELECT value FROM json_each(?1)) AND queue = ?2 AND receipt IN (SELECT value FROM json_each(?3)) RETURNING receipt`
	sqlChangeVisibility = `UPDATE messages SET visible_at = ? WHERE id = ? AND queue = ? AND receipt = ?`
)

// sqlSend is the statement that stores n messages, unless the queue does
// not exist: one statement whatever n.
func sqlSend(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO messages (queue, body, attributes, sent_at, visible_at) SELECT ?1, column1, column2, ?2, column3 FROM (VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(?%d, ?%d, ?%d)", 3+3*i, 4+3*i, 5+3*i)
	}
	b.WriteString(`) WHERE EXISTS (SELECT 1 FROM queues WHERE name = ?1)`)
	return b.String()
}

// prepared returns the statements for queries, preparing those not
// prepared yet. Callers prepare before they begin a transaction: preparing
// inside one would take a second connection while it holds the write lock.
func (q *Queue) prepared(ctx context.Context, queries ...string) ([]*sql.Stmt, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]*sql.Stmt, len(queries))
	for i, query := range queries {
		st, ok := q.stmts[query]
		if !ok {
			var err error
			if st, err = q.db.sql.PrepareContext(ctx, query); err != nil {
				return nil, fmt.Errorf("prepare: %w", err)
			}
			if q.stmts == nil {
				q.stmts = map[string]*sql.Stmt{}
			}
			q.stmts[query] = st
		}
		out[i] = st
	}
	return out, nil
}

var (
	_ queue.Sender       = (*Queue)(nil)
	_ queue.Receiver     = (*Queue)(nil)
	_ queue.BatchDeleter = (*Queue)(nil)
)

// QueueOptions tune OpenQueue. The zero value (or nil) opens the queue
// with the policy stored for it, if any.
type QueueOptions struct {
	// DeadLetterQueue names the queue that takes a message, on its next receive,
	// once it was received MaxReceives times without being deleted.
	// OpenQueue creates that queue and stores the policy in the database,
	// replacing the queue's previous one, so that every process opening the
	// queue applies it. Empty keeps the stored policy (none for a new queue).
	DeadLetterQueue string
	// MaxReceives is the dead-letter policy's maximum receive count: it must
	// be positive when DeadLetterQueue is set and zero otherwise.
	MaxReceives int
	// NowFunc is the clock for send times, and for receives and visibility
	// changes whose params carry no Now. Nil means time.Now.
	NowFunc func() time.Time
	// PollInterval is how often a long poll (ReceiveParams.Wait) looks for
	// messages; 0 means 100ms.
	PollInterval time.Duration
}

// OpenQueue opens the queue called name in db, creating it if needed (and
// its dead-letter queue, when o names one).
func OpenQueue(ctx context.Context, db *DB, name string, o *QueueOptions) (*Queue, error) {
	q := &Queue{db: db, name: name, nowFunc: time.Now, poll: 100 * time.Millisecond}
	var dlq string
	var maxReceives int
	if o != nil {
		dlq, maxReceives = o.DeadLetterQueue, o.MaxReceives
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
	if db.readOnly {
		// Nothing to create: the queue must exist.
		var n int
		if err := db.sql.QueryRowContext(ctx, `SELECT COUNT(*) FROM queues WHERE name = ?`, name).Scan(&n); err != nil {
			return nil, fmt.Errorf("open queue %s: %w", name, err)
		}
		if n == 0 {
			return nil, fmt.Errorf("open queue %s: %w", name, queue.ErrNotFound)
		}
		return q, nil
	}
	at := toNanos(q.nowFunc())
	err := db.writeAtomic(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, n := range []string{name, dlq} {
			if n == "" {
				continue
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO queues (name, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING`, n, at); err != nil {
				return fmt.Errorf("create %s: %w", n, err)
			}
		}
		if dlq != "" {
			if _, err := tx.ExecContext(ctx, `UPDATE queues SET dead_letter = ?, max_receives = ? WHERE name = ?`, dlq, maxReceives, name); err != nil {
				return fmt.Errorf("store dead-letter policy: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("open queue %s: %w", name, err)
	}
	return q, nil
}

// Name is the queue's name.
func (q *Queue) Name() string { return q.name }

// DeadLetterPolicy returns the stored dead-letter queue and maximum receive
// count, or "" and 0 when the queue has none. It returns queue.ErrNotFound
// when the queue does not exist.
func (q *Queue) DeadLetterPolicy(ctx context.Context) (deadLetter string, maxReceives int, err error) {
	err = q.db.sql.QueryRowContext(ctx, `SELECT dead_letter, max_receives FROM queues WHERE name = ?`, q.name).Scan(&deadLetter, &maxReceives)
	if errors.Is(err, sql.ErrNoRows) {
		err = queue.ErrNotFound
	}
	if err != nil {
		return "", 0, fmt.Errorf("dead-letter policy of %s: %w", q.name, err)
	}
	return deadLetter, maxReceives, nil
}

// SendBatch stores msgs in one statement: every entry is sent or none is,
// so it never returns a *queue.BatchError.
func (q *Queue) SendBatch(ctx context.Context, msgs []queue.Message) error {
	if err := queue.CheckBatch(msgs); err != nil {
		return fmt.Errorf("send to %s: %w", q.name, err)
	}
	now := q.nowFunc()
	args := make([]any, 2, 2+3*len(msgs))
	args[0], args[1] = q.name, toNanos(now)
	for _, m := range msgs {
		attrs, err := sqlstore.EncodeAttributes(m.Attributes)
		if err != nil {
			return fmt.Errorf("send to %s: entry %s: %w", q.name, m.ID, err)
		}
		body := m.Body
		if body == nil {
			body = []byte{}
		}
		var visible int64 // 0: visible at once
		if m.Delay > 0 {
			visible = toNanos(now.Add(m.Delay))
		}
		args = append(args, body, attrs, visible)
	}
	st, err := q.prepared(ctx, sqlSend(len(msgs)))
	if err != nil {
		return fmt.Errorf("send to %s: %w", q.name, err)
	}
	var res sql.Result
	err = q.db.write(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		res, err = tx.StmtContext(ctx, st[0]).ExecContext(ctx, args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("send to %s: %w", q.name, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != int64(len(msgs)) {
		if err == nil {
			err = queue.ErrNotFound // the statement's one condition
		}
		return fmt.Errorf("send to %s: %w", q.name, err)
	}
	return nil
}
