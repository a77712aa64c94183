package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/internal/queue"
)

// Queue is one named queue in the database. It implements queue.Sender and
// queue.Receiver. Any number of Queue values for the same name, in one
// process or several sharing the file, may be used at once: every receive
// hides the messages it returns in one IMMEDIATE transaction, so no two
// receivers get a message while it is hidden.
//
// Message ids are the row ids (kept when a message moves to another
// queue). Never-received messages are delivered in send order, before the
// messages that became visible again after a receive; there is no other
// ordering guarantee. A message moved to another queue (dead-lettered or
// redriven) starts there with a receive count of zero and remembers the
// queue it came from and when.
type Queue struct {
	db   *DB
	name string
	now  func() time.Time
	poll time.Duration

	mu    sync.Mutex
	stmts map[string]*sql.Stmt // prepared on first use, by query text
}

// The statements of the hot paths, prepared once per Queue: parsing costs
// about as much as running them.
const (
	sqlQueueExists      = `SELECT 1 FROM queues WHERE name = ?`
	sqlInsertMessage    = `INSERT INTO messages (queue, body, attributes, sent_at) VALUES (?, ?, ?, ?)`
	sqlAnyVisible       = `SELECT 1 FROM messages WHERE queue = ? AND visible_at <= ? LIMIT 1`
	sqlPolicy           = `SELECT dead_letter, max_receives FROM queues WHERE name = ?`
	sqlVisible          = `SELECT id, receive_count FROM messages WHERE queue = ? AND visible_at <= ? ORDER BY visible_at, id LIMIT ?`
	sqlTake             = `UPDATE messages SET visible_at = ?, receive_count = receive_count + 1, receipt = ? WHERE id = ? RETURNING body, attributes, sent_at, receive_count`
	sqlDelete           = `DELETE FROM messages WHERE queue = ? AND receipt = ? AND receipt != ''`
	sqlChangeVisibility = `UPDATE messages SET visible_at = ? WHERE queue = ? AND receipt = ? AND receipt != ''`
)

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
	_ queue.Sender   = (*Queue)(nil)
	_ queue.Receiver = (*Queue)(nil)
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
	q := &Queue{db: db, name: name, now: time.Now, poll: 100 * time.Millisecond}
	var dlq string
	var maxReceives int
	if o != nil {
		dlq, maxReceives = o.DeadLetterQueue, o.MaxReceives
		if o.NowFunc != nil {
			q.now = o.NowFunc
		}
		if o.PollInterval > 0 {
			q.poll = o.PollInterval
		}
	}
	switch {
	case name == "":
		return nil, errors.New("open queue: empty name")
	case maxReceives < 0 || (dlq == "") != (maxReceives == 0):
		return nil, fmt.Errorf("open queue %s: dead-letter queue %q with max receives %d: give both or neither", name, dlq, maxReceives)
	case dlq == name:
		return nil, fmt.Errorf("open queue %s: a queue cannot be its own dead-letter queue", name)
	}
	done, err := db.write(ctx)
	if err != nil {
		return nil, fmt.Errorf("open queue %s: %w", name, err)
	}
	defer done()
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("open queue %s: %w", name, err)
	}
	defer tx.Rollback()
	at := toNanos(q.now())
	for _, n := range []string{name, dlq} {
		if n == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO queues (name, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING`, n, at); err != nil {
			return nil, fmt.Errorf("open queue %s: create %s: %w", name, n, err)
		}
	}
	if dlq != "" {
		if _, err := tx.ExecContext(ctx, `UPDATE queues SET dead_letter = ?, max_receives = ? WHERE name = ?`, dlq, maxReceives, name); err != nil {
			return nil, fmt.Errorf("open queue %s: store dead-letter policy: %w", name, err)
		}
	}
	if err := tx.Commit(); err != nil {
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

// SendBatch stores msgs in one transaction: every entry is sent or none is,
// so it never returns a *queue.BatchError.
func (q *Queue) SendBatch(ctx context.Context, msgs []queue.Message) error {
	if err := queue.CheckBatch(msgs); err != nil {
		return fmt.Errorf("send to %s: %w", q.name, err)
	}
	at := toNanos(q.now())
	st, err := q.prepared(ctx, sqlQueueExists, sqlInsertMessage)
	if err != nil {
		return fmt.Errorf("send to %s: %w", q.name, err)
	}
	done, err := q.db.write(ctx)
	if err != nil {
		return fmt.Errorf("send to %s: %w", q.name, err)
	}
	defer done()
	tx, err := q.db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("send to %s: %w", q.name, err)
	}
	defer tx.Rollback()
	if err := queueExists(ctx, tx.StmtContext(ctx, st[0]), q.name); err != nil {
		return fmt.Errorf("send to %s: %w", q.name, err)
	}
	insert := tx.StmtContext(ctx, st[1])
	for _, m := range msgs {
		attrs, err := encodeAttributes(m.Attributes)
		if err != nil {
			return fmt.Errorf("send to %s: entry %s: %w", q.name, m.ID, err)
		}
		body := m.Body
		if body == nil {
			body = []byte{}
		}
		if _, err := insert.ExecContext(ctx, q.name, body, attrs, at); err != nil {
			return fmt.Errorf("send to %s: entry %s: %w", q.name, m.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("send to %s: %w", q.name, err)
	}
	return nil
}

// Receive returns up to p.Max visible messages, hiding each until
// p.Now+p.Visibility. A zero p.Now means the queue's clock. A long poll
// (p.Wait > 0) looks again every PollInterval until a message is visible,
// Wait has passed or ctx is done; its later looks use p.Now plus the time
// waited. On ctx's end it returns ctx's error.
func (q *Queue) Receive(ctx context.Context, p queue.ReceiveParams) ([]queue.Delivery, error) {
	switch {
	case p.Max < 1 || p.Max > queue.MaxBatch:
		return nil, fmt.Errorf("receive from %s: max %d not in 1..%d", q.name, p.Max, queue.MaxBatch)
	case p.Visibility < 0 || p.Wait < 0:
		return nil, fmt.Errorf("receive from %s: negative visibility %s or wait %s", q.name, p.Visibility, p.Wait)
	}
	began := time.Now()
	now := p.Now
	for {
		if p.Now.IsZero() {
			now = q.now()
		}
		ds, err := q.receiveOnce(ctx, p.Max, p.Visibility, now)
		if err != nil || len(ds) > 0 {
			return ds, err
		}
		waited := time.Since(began)
		if waited >= p.Wait {
			return nil, nil
		}
		timer := time.NewTimer(min(q.poll, p.Wait-waited))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("receive from %s: %w", q.name, ctx.Err())
		case <-timer.C:
		}
		if !p.Now.IsZero() {
			now = p.Now.Add(time.Since(began))
		}
	}
}

// receiveOnce is one look for visible messages at now.
func (q *Queue) receiveOnce(ctx context.Context, max int, visibility time.Duration, now time.Time) ([]queue.Delivery, error) {
	at := now.UnixNano()
	st, err := q.prepared(ctx, sqlAnyVisible, sqlPolicy, sqlVisible, sqlTake)
	if err != nil {
		return nil, fmt.Errorf("receive from %s: %w", q.name, err)
	}
	// A plain read first, so that idle polls take no write lock.
	var one int
	err = st[0].QueryRowContext(ctx, q.name, at).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("receive from %s: %w", q.name, err)
	}

	done, err := q.db.write(ctx)
	if err != nil {
		return nil, fmt.Errorf("receive from %s: %w", q.name, err)
	}
	defer done()
	tx, err := q.db.sql.BeginTx(ctx, nil) // IMMEDIATE: one receiver at a time
	if err != nil {
		return nil, fmt.Errorf("receive from %s: %w", q.name, err)
	}
	defer tx.Rollback()
	var dlq string
	var maxReceives int
	err = tx.StmtContext(ctx, st[1]).QueryRowContext(ctx, q.name).Scan(&dlq, &maxReceives)
	if errors.Is(err, sql.ErrNoRows) {
		err = queue.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("receive from %s: %w", q.name, err)
	}

	var out []queue.Delivery
	// With Visibility 0 a taken message stays visible: skip it. Max
	// candidates are enough, as the taken ones are fewer than Max.
	taken := map[int64]bool{}
	visible, take := tx.StmtContext(ctx, st[2]), tx.StmtContext(ctx, st[3])
	for len(out) < max {
		cands, err := visibleMessages(ctx, visible, q.name, at, max)
		if err != nil {
			return nil, fmt.Errorf("receive from %s: %w", q.name, err)
		}
		progress := false
		for _, c := range cands {
			if taken[c.id] || len(out) == max {
				continue
			}
			progress = true
			if maxReceives > 0 && c.receiveCount >= maxReceives {
				if err := moveMessage(ctx, tx, c.id, q.name, dlq, at); err != nil {
					return nil, fmt.Errorf("receive from %s: dead-letter message %d to %s: %w", q.name, c.id, dlq, err)
				}
				continue
			}
			d, err := takeMessage(ctx, take, c.id, at+int64(visibility))
			if err != nil {
				return nil, fmt.Errorf("receive from %s: message %d: %w", q.name, c.id, err)
			}
			taken[c.id] = true
			out = append(out, d)
		}
		if !progress {
			break
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("receive from %s: %w", q.name, err)
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

// takeMessage hides message id until visibleAt under a fresh receipt
// handle, with st, the prepared sqlTake.
func takeMessage(ctx context.Context, st *sql.Stmt, id, visibleAt int64) (queue.Delivery, error) {
	d := queue.Delivery{MessageID: strconv.FormatInt(id, 10), ReceiptHandle: rand.Text()}
	var attrs string
	var sentAt int64
	err := st.QueryRowContext(ctx, visibleAt, d.ReceiptHandle, id).Scan(&d.Body, &attrs, &sentAt, &d.ReceiveCount)
	if err != nil {
		return queue.Delivery{}, err
	}
	d.SentAt = fromNanos(sentAt)
	if d.Attributes, err = decodeAttributes(attrs); err != nil {
		return queue.Delivery{}, err
	}
	return d, nil
}

// moveMessage moves message id from queue src to dst, visible at once,
// with its receive count reset and its receipt handle voided.
func moveMessage(ctx context.Context, tx *sql.Tx, id int64, src, dst string, at int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE messages SET queue = ?, visible_at = 0, receive_count = 0, receipt = '', moved_from = ?, moved_at = ?
		WHERE id = ?`, dst, src, at, id)
	return err
}

// Delete removes the message last received with receiptHandle. It returns
// queue.ErrInvalidReceipt when the handle is not the latest of a message in
// this queue.
func (q *Queue) Delete(ctx context.Context, receiptHandle string) error {
	st, err := q.prepared(ctx, sqlDelete)
	if err != nil {
		return fmt.Errorf("delete from %s: %w", q.name, err)
	}
	done, err := q.db.write(ctx)
	if err != nil {
		return fmt.Errorf("delete from %s: %w", q.name, err)
	}
	res, err := st[0].ExecContext(ctx, q.name, receiptHandle)
	done()
	if err := q.oneRow(res, err); err != nil {
		return fmt.Errorf("delete from %s: %w", q.name, err)
	}
	return nil
}

// ChangeVisibility hides the message last received with p.ReceiptHandle
// until p.Now+p.Timeout (a zero p.Now means the queue's clock). Errors as
// Delete.
func (q *Queue) ChangeVisibility(ctx context.Context, p queue.ChangeVisibilityParams) error {
	if p.Timeout < 0 {
		return fmt.Errorf("change visibility in %s: negative timeout %s", q.name, p.Timeout)
	}
	now := p.Now
	if now.IsZero() {
		now = q.now()
	}
	st, err := q.prepared(ctx, sqlChangeVisibility)
	if err != nil {
		return fmt.Errorf("change visibility in %s: %w", q.name, err)
	}
	done, err := q.db.write(ctx)
	if err != nil {
		return fmt.Errorf("change visibility in %s: %w", q.name, err)
	}
	res, err := st[0].ExecContext(ctx, now.Add(p.Timeout).UnixNano(), q.name, p.ReceiptHandle)
	done()
	if err := q.oneRow(res, err); err != nil {
		return fmt.Errorf("change visibility in %s: %w", q.name, err)
	}
	return nil
}

// oneRow turns a statement's result into nil when it changed a row and
// queue.ErrInvalidReceipt when it changed none.
func (q *Queue) oneRow(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return queue.ErrInvalidReceipt
	}
	return nil
}

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
	done, err := q.db.write(ctx)
	if err != nil {
		return 0, fmt.Errorf("move %s to %s: %w", q.name, dst.name, err)
	}
	defer done()
	res, err := q.db.sql.ExecContext(ctx, `UPDATE messages
		SET queue = ?, visible_at = 0, receive_count = 0, receipt = '', moved_from = ?, moved_at = ?
		WHERE id IN (SELECT id FROM messages WHERE queue = ? AND visible_at <= ? ORDER BY visible_at, id LIMIT ?)`,
		dst.name, q.name, at, q.name, at, max)
	if err != nil {
		return 0, fmt.Errorf("move %s to %s: %w", q.name, dst.name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("move %s to %s: %w", q.name, dst.name, err)
	}
	return int(n), nil
}

// queueExists checks the queue with st, the prepared sqlQueueExists.
func queueExists(ctx context.Context, st *sql.Stmt, name string) error {
	var one int
	err := st.QueryRowContext(ctx, name).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return queue.ErrNotFound
	}
	return err
}

func encodeAttributes(m map[string]string) (string, error) {
	if len(m) == 0 {
		return "", nil
	}
	for k, v := range m {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return "", fmt.Errorf("attribute %q: not valid UTF-8", k)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encode attributes: %w", err)
	}
	return string(b), nil
}

func decodeAttributes(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("decode attributes: %w", err)
	}
	return m, nil
}
