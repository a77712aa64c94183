package ops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// ErrNoDeadLetterQueue matches the error of the dead-letter actions on a
// backend that has no dead-letter queue configured.
var ErrNoDeadLetterQueue = errors.New("no dead-letter queue configured")

type noDLQError struct{ backend string }

func (e noDLQError) Error() string {
	return fmt.Sprintf("the %s backend has no dead-letter queue configured", e.backend)
}

func (e noDLQError) Is(target error) bool { return target == ErrNoDeadLetterQueue }

func (o *Operator) deadLetterQueue() (queue.Ops, error) {
	if o.b.DeadLetter == nil {
		return queue.Ops{}, noDLQError{o.b.Name}
	}
	return queue.OpsOf(o.b.DeadLetter), nil
}

// DeadLetter is one message of the dead-letter queue, decoded and checked
// as the consumer will check it on a redrive.
type DeadLetter struct {
	MessageID    string    `json:"message_id"`
	Key          string    `json:"key,omitempty"`
	Malformed    string    `json:"malformed,omitempty"` // why the body is not an item message
	ItemState    string    `json:"item_state,omitempty"`
	Attempts     int       `json:"attempts"`
	ReceiveCount int       `json:"receive_count"`
	LastError    string    `json:"last_error,omitempty"`
	SentAt       time.Time `json:"sent_at"`
	AgeSeconds   float64   `json:"age_seconds"`
	OnRedrive    string    `json:"on_redrive"` // what a redrive would do with it
}

// DeadLetters lists up to max messages of the dead-letter queue without
// consuming them (on SQS a peek counts as a receive), each with its item's
// state and what a redrive would do with it.
func (o *Operator) DeadLetters(ctx context.Context, max int) ([]DeadLetter, error) {
	if max < 1 {
		return nil, fmt.Errorf("dead letters: max must be at least 1, got %d", max)
	}
	ops, err := o.deadLetterQueue()
	if err != nil {
		return nil, err
	}
	msgs, err := ops.Peek(ctx, max)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	now := o.now().UTC()
	rows := make([]DeadLetter, 0, len(msgs))
	for _, m := range msgs {
		row, err := o.describe(ctx, m, now)
		if err != nil {
			return rows, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// describe decodes m, checks it as the consumer will (its job and asset
// against the catalog, its run against the ledger) and looks its item up,
// to predict what a redrive does with it.
func (o *Operator) describe(ctx context.Context, m queue.Peeked, now time.Time) (DeadLetter, error) {
	c, l := o.catalog, o.b.Ledger
	row := DeadLetter{MessageID: m.MessageID, ReceiveCount: m.ReceiveCount, SentAt: m.SentAt.UTC(),
		AgeSeconds: now.Sub(m.SentAt).Seconds(), LastError: m.Attributes[message.AttrError]}
	msg, err := message.Decode(m.Body)
	if err != nil {
		row.Malformed = err.Error()
		if row.LastError == "" {
			row.LastError = err.Error()
		}
		row.OnRedrive = "rejected again (malformed)"
		return row, nil
	}
	key, _ := msg.ItemKey() // Decode checked it
	row.Key = key.String()
	j, err := c.Lookup(key.Run.Job)
	if err != nil {
		row.OnRedrive = "rejected again (unknown job)"
		return row, nil
	}
	paged := jobspec.RunTime(j) || key.Run.Submitted() // the run's items are its stored pages
	switch {
	case paged && msg.IsShard() && !msg.PageShard():
		row.OnRedrive = "rejected again (malformed: a shard message for a run of stored pages)"
		return row, nil
	case !paged && msg.PageShard():
		row.OnRedrive = "rejected again (malformed: a page shard for a job of constant items)"
		return row, nil
	case paged != msg.Paged() && !msg.PageShard():
		row.OnRedrive = fmt.Sprintf("rejected again (malformed: version %d does not fit the job's items)", msg.Version)
		return row, nil
	}
	if !paged && !j.HasItem(key.Asset) {
		row.OnRedrive = "rejected again (unknown asset)"
		return row, nil
	}
	if key.Run.Nominal.After(now) {
		row.OnRedrive = "rejected again (future tick)"
		return row, nil
	}
	run, err := ledger.GetRunOf(ctx, l, key.Run)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		row.OnRedrive = "rejected again (the tick has no run)"
		return row, nil
	case err != nil:
		return row, fmt.Errorf("look up %s: %w", key.Run, err)
	case key.Run.Generation > run.ID.Generation:
		row.OnRedrive = "rejected again (generation never opened)"
		return row, nil
	case key.Run.Generation < run.ID.Generation:
		row.OnRedrive = "acknowledged (superseded by " + run.ID.String() + ")"
		return row, nil
	}
	if msg.IsShard() {
		return describeShard(ctx, l, j, msg, key, row)
	}
	it, err := l.GetItem(ctx, key)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		row.ItemState, row.OnRedrive = Pending, "runs"
		return row, nil
	case err != nil:
		return row, fmt.Errorf("look up %s: %w", key, err)
	}
	row.ItemState, row.Attempts = string(it.State), it.Attempt
	if row.LastError == "" {
		row.LastError = it.Error
	}
	switch {
	case it.State.Terminal():
		row.OnRedrive = "acknowledged, not re-run"
	case it.State == ledger.ItemRunning && it.LeaseUntil.After(now):
		row.OnRedrive = "retried after the live claim"
	default:
		row.OnRedrive = "runs"
	}
	return row, nil
}

// describeShard is describe for a shard message (hierarchical fan-out),
// which runs nothing itself: it sends its range's item messages again,
// whose claims absorb the items already done.
func describeShard(ctx context.Context, l ledger.Store, j baton.Job, msg message.Message, key ledger.ItemKey, row DeadLetter) (DeadLetter, error) {
	row.ItemState = "-"
	verb := "expands"
	if j.Bulk {
		verb = "runs in place" // a bulk job's consumer runs a shard's items itself
	}
	row.OnRedrive = fmt.Sprintf("%s items %d to %d again", verb, msg.Expand.From, msg.Expand.To-1)
	if msg.PageShard() {
		pg, err := l.GetPage(ctx, key.Run, msg.Page)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			row.OnRedrive = fmt.Sprintf("rejected again (page %d of the run's list is not stored)", msg.Page)
		case err != nil:
			return row, fmt.Errorf("look up page %d of %s: %w", msg.Page, key.Run, err)
		case len(pg.Items) == 0 || pg.Items[0].Name != key.Asset:
			row.OnRedrive = fmt.Sprintf("rejected again (malformed: %s is not the first item of page %d)", key.Asset, msg.Page)
		default:
			row.OnRedrive = fmt.Sprintf("%s the %d items of page %d again", verb, len(pg.Items), msg.Page)
		}
	}
	return row, nil
}

// QueueLeft is what a dead-letter queue still holds after an action.
type QueueLeft struct {
	// Known is false when the queue could not be counted (then the other
	// fields are zero).
	Known bool
	// Messages is every message it holds: visible, in flight, delayed.
	Messages int
	// Approximate is set when the count is eventually consistent (SQS).
	Approximate bool
}

func (o *Operator) left(ctx context.Context, ops queue.Ops) QueueLeft {
	d, err := ops.Depth(ctx)
	if err != nil {
		return QueueLeft{}
	}
	return QueueLeft{Known: true, Messages: d.Total(), Approximate: d.Approximate}
}

// RedriveResult says what Redrive did.
type RedriveResult struct {
	Moved int       // messages moved back to the work queue
	Left  QueueLeft // the dead-letter queue afterwards (when Redrive succeeded)
}

// Redrive moves dead letters back to the work queue, oldest first: all of
// them (max 0) or at most max. Each keeps its body and so its idempotency
// key: items that meanwhile SUCCEEDED, ended DEAD or were CANCELLED are
// acknowledged without running; the others run. A failure half-way
// returns the count moved so far with the error.
func (o *Operator) Redrive(ctx context.Context, max int) (RedriveResult, error) {
	var res RedriveResult
	if max < 0 {
		return res, fmt.Errorf("redrive: max must not be negative, got %d", max)
	}
	ops, err := o.deadLetterQueue()
	if err != nil {
		return res, err
	}
	res.Moved, err = ops.MoveTo(ctx, o.b.Work, max)
	if err != nil {
		return res, fmt.Errorf("redrive stopped after %d message(s): %w", res.Moved, err)
	}
	res.Left = o.left(ctx, ops)
	return res, nil
}

// PurgeResult says what Purge did.
type PurgeResult struct {
	Purged int       // messages deleted
	Left   QueueLeft // the dead-letter queue afterwards (when Purge succeeded)
}

// Purge deletes dead letters for good, oldest first: all of them (max 0)
// or at most max. Each is received, then deleted: messages another
// process holds in flight are left. A failure half-way returns the count
// deleted so far with the error. PurgePreview says beforehand what it
// would delete.
func (o *Operator) Purge(ctx context.Context, max int) (PurgeResult, error) {
	var res PurgeResult
	if max < 0 {
		return res, fmt.Errorf("purge: max must not be negative, got %d", max)
	}
	ops, err := o.deadLetterQueue()
	if err != nil {
		return res, err
	}
	res.Purged, err = ops.Purge(ctx, max)
	if err != nil {
		return res, fmt.Errorf("purge stopped after %d message(s): %w", res.Purged, err)
	}
	res.Left = o.left(ctx, ops)
	return res, nil
}

// PurgePreview says what Purge(limit) would delete.
type PurgePreview struct {
	// Letters are the first messages (at most the limit, or 100 without one).
	Letters []DeadLetter
	// Would is how many messages Purge would delete: the visible ones, at
	// most max.
	Would int
}

// purgePreview is how many messages PreviewPurge lists without a limit.
const purgePreview = 100

// PreviewPurge lists what Purge(ctx, limit) would delete, and deletes
// nothing.
func (o *Operator) PreviewPurge(ctx context.Context, limit int) (PurgePreview, error) {
	var p PurgePreview
	if limit < 0 {
		return p, fmt.Errorf("purge: max must not be negative, got %d", limit)
	}
	ops, err := o.deadLetterQueue()
	if err != nil {
		return p, err
	}
	shown := purgePreview
	if limit > 0 {
		shown = limit
	}
	if p.Letters, err = o.DeadLetters(ctx, shown); err != nil {
		return p, err
	}
	held := len(p.Letters)
	if d, err := ops.Depth(ctx); err == nil {
		held = max(held, d.Visible)
	}
	p.Would = held
	if limit > 0 {
		p.Would = min(held, limit)
	}
	return p, nil
}
