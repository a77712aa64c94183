package cli

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

const dlqAbout = `Inspect, redrive and purge the dead-letter queue.

A message lands there when its item failed on every delivery up to the
queue's limit, or when it is not a baton item message at all. Every item
message carries its idempotency key in its body, so a redriven message for
an item that meanwhile SUCCEEDED (or ended DEAD or CANCELLED) is
acknowledged without running again; only items still FAILED, RUNNING past
their lease, or never claimed run. To re-run a DEAD item, replay it
('baton replay item --force').`

func dlqSubcommands() []command {
	return []command{
		{synopsis: dlqListSynopsis, summary: "dead letters: decoded key, item state, receives, last error, age", backend: true, defineFunc: defineDLQList,
			example: "  baton dlq list\n  baton dlq list --backend aws --max 20 --json"},
		{synopsis: dlqRedriveSynopsis, summary: "move dead letters back to the work queue", backend: true, defineFunc: defineDLQRedrive,
			example: "  baton dlq redrive\n  baton dlq redrive --max 10 --json"},
		{synopsis: dlqPurgeSynopsis, summary: "delete dead letters (shows them first; --yes deletes)", backend: true, defineFunc: defineDLQPurge,
			example: "  baton dlq purge            # what would be deleted\n  baton dlq purge --yes --json"},
	}
}

const dlqListSynopsis = `dlq list [--max N] [--json] [flags]

Lists the dead-letter queue's messages without consuming them: the item
key decoded from the body (or why the body is not an item message), the
item's state in the ledger and what a redrive would do with it, the
receive count, the last error (the reason the consumer attached, else the
item's last failure), and the message's age.

On SQS a message can only be seen by receiving it: listing counts as one
receive of each message shown (the dead-letter queue has no redrive
limit, so nothing moves because of it). The embedded queue restarts a
message's receive count when it moves, so there it counts receives in the
dead-letter queue only; ATTEMPTS (from the ledger) is the item's claims.`

// deadLetter is one row of dlq list.
type deadLetter struct {
	MessageID    string    `json:"message_id"`
	Key          string    `json:"key,omitempty"`
	Malformed    string    `json:"malformed,omitempty"` // why the body is not an item message
	ItemState    string    `json:"item_state,omitempty"`
	Attempts     int       `json:"attempts"`
	ReceiveCount int       `json:"receive_count"`
	LastError    string    `json:"last_error,omitempty"`
	SentAt       time.Time `json:"sent_at"`
	AgeSeconds   float64   `json:"age_seconds"`
	OnRedrive    string    `json:"on_redrive"`
}

func defineDLQList(e *env, fs *pflag.FlagSet) runFunc {
	var limit int
	fs.IntVar(&limit, "max", 100, "list at most this many messages")
	return func(ctx context.Context, _ []string) error { return dlqList(ctx, e, limit) }
}

func dlqList(ctx context.Context, e *env, limit int) error {
	common := &e.backend
	if limit < 1 {
		return usagef("--max must be at least 1, got %d", limit)
	}
	b, err := common.openReadOnly(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	if b.DeadLetter == nil {
		return fmt.Errorf("the %s backend has no dead-letter queue configured", b.Name)
	}
	msgs, err := queue.OpsOf(b.DeadLetter).Peek(ctx, limit)
	if err != nil {
		return fmt.Errorf("list dead letters: %w", err)
	}
	now := time.Now().UTC()
	rows := make([]deadLetter, 0, len(msgs))
	for _, m := range msgs {
		row, err := describeDeadLetter(ctx, e.catalog, b.Ledger, m, now)
		if err != nil {
			return err
		}
		rows = append(rows, row)
	}
	if e.json {
		e.custom = struct {
			Backend  string       `json:"backend"`
			Now      time.Time    `json:"now"`
			Messages []deadLetter `json:"messages"`
		}{b.Name, now, rows}
		return nil
	}
	if len(rows) == 0 {
		fmt.Fprintln(e.stdout, "the dead-letter queue is empty")
		return nil
	}
	printDeadLetters(e, rows)
	e.sayf("%d message(s); 'baton dlq redrive' moves them back to the work queue\n", len(rows))
	return nil
}

// printDeadLetters prints rows as dlq list's table.
func printDeadLetters(e *env, rows []deadLetter) {
	tw := tabwriter.NewWriter(e.text(), 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MESSAGE\tKEY\tITEM\tATTEMPTS\tRECEIVES\tAGE\tON REDRIVE\tLAST ERROR")
	for _, r := range rows {
		key, state := r.Key, r.ItemState
		if r.Malformed != "" {
			key, state = "(malformed)", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", r.MessageID, key, state, r.Attempts, r.ReceiveCount,
			ago(time.Duration(r.AgeSeconds*float64(time.Second))), r.OnRedrive, oneLine(r.LastError, 100))
	}
	tw.Flush()
}

// describeDeadLetter decodes m, checks it as the consumer will (its job
// and asset against the catalog, its run against the ledger) and looks its
// item up, to predict what a redrive does with it.
func describeDeadLetter(ctx context.Context, c *baton.Catalog, l ledger.Store, m queue.Peeked, now time.Time) (deadLetter, error) {
	row := deadLetter{MessageID: m.MessageID, ReceiveCount: m.ReceiveCount, SentAt: m.SentAt.UTC(),
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
	paged := j.RunTime() || key.Run.Submitted() // the run's items are its stored pages
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
		// A shard message (hierarchical fan-out) runs nothing itself: it
		// sends its range's item messages again, whose claims absorb the
		// items already done.
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
	it, err := l.GetItem(ctx, key)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		row.ItemState, row.OnRedrive = pending, "runs"
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
	case it.State == ledger.ItemRunning && !stuck(it, 0, now):
		row.OnRedrive = "retried after the live claim"
	default:
		row.OnRedrive = "runs"
	}
	return row, nil
}

// oneLine shortens s to one line of at most n runes.
func oneLine(s string, n int) string {
	r := []rune(s)
	for i, c := range r {
		if c == '\n' || c == '\r' {
			r = r[:i]
			break
		}
	}
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return string(r)
}

const dlqRedriveSynopsis = `dlq redrive [--max N] [flags]

Moves dead letters back to the work queue, oldest first (all of them, or at
most N). Each keeps its body, and so its idempotency key: items that
meanwhile SUCCEEDED, ended DEAD or were CANCELLED are acknowledged without
running; the others run. A message that fails again dead-letters again.

On SQS without --max this starts SQS's message-move task (the console's
"redrive") and waits for it; with --max, and on the embedded store, messages
are moved directly (on SQS: received, sent, then deleted, so a failure in
between leaves a duplicate the consumer absorbs, never a loss).
'baton dlq list' shows beforehand what each message will do.`

func defineDLQRedrive(e *env, fs *pflag.FlagSet) runFunc {
	var limit int
	fs.IntVar(&limit, "max", 0, "move at most this many messages (0: all)")
	return func(ctx context.Context, _ []string) error { return dlqRedrive(ctx, e, limit) }
}

func dlqRedrive(ctx context.Context, e *env, limit int) error {
	common := &e.backend
	if limit < 0 {
		return usagef("--max must not be negative, got %d", limit)
	}
	b, err := common.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	if b.DeadLetter == nil {
		return fmt.Errorf("the %s backend has no dead-letter queue configured", b.Name)
	}
	n, err := queue.OpsOf(b.DeadLetter).MoveTo(ctx, b.Work, limit)
	e.set("moved", n)
	if n > 0 || err == nil {
		e.sayf("moved %d message(s) from the dead-letter queue to the work queue; items already terminal are acknowledged without running\n", n)
	}
	if err != nil {
		return fmt.Errorf("redrive stopped after %d message(s): %w", n, err)
	}
	if d, err := queue.OpsOf(b.DeadLetter).Depth(ctx); err == nil && d.Total() > 0 {
		approx := ""
		if d.Approximate {
			approx = " (approximate)"
		}
		e.set("left", d.Total())
		e.sayf("%d message(s) left in the dead-letter queue%s (in flight or beyond --max)\n", d.Total(), approx)
	}
	return nil
}

const dlqPurgeSynopsis = `dlq purge [--max N] [--yes] [flags]

Deletes dead letters for good (all of them, or at most N, oldest first):
messages that will never be worth redriving, such as malformed ones or
those of items replayed since ('baton dlq list' says what a redrive would
do with each). An item keeps its record in the ledger: 'baton replay item'
still runs it again.

Without --yes it deletes nothing: it lists the messages a purge would
delete (at most --max, or the first 100) and how many there are, and exits
with status 1. With --yes it deletes them and reports how many it deleted
and how many are left (in flight, arrived meanwhile, or beyond --max).

Each message is received, then deleted, on every backend (on SQS this is
not PurgeQueue, which also drops messages in flight and cannot count):
messages another process holds in flight are left.`

// purgePreview is how many messages dlq purge lists without --yes when
// there is no --max.
const purgePreview = 100

func defineDLQPurge(e *env, fs *pflag.FlagSet) runFunc {
	var (
		limit int
		yes   bool
	)
	fs.IntVar(&limit, "max", 0, "delete at most this many messages (0: all)")
	fs.BoolVar(&yes, "yes", false, "delete them; without it, list what would be deleted and delete nothing")
	return func(ctx context.Context, _ []string) error { return dlqPurge(ctx, e, limit, yes) }
}

func dlqPurge(ctx context.Context, e *env, limit int, yes bool) error {
	if limit < 0 {
		return usagef("--max must not be negative, got %d", limit)
	}
	b, err := e.backend.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	if b.DeadLetter == nil {
		return fmt.Errorf("the %s backend has no dead-letter queue configured", b.Name)
	}
	ops := queue.OpsOf(b.DeadLetter)
	e.set("purged", 0)
	if !yes {
		shown := purgePreview
		if limit > 0 {
			shown = limit
		}
		msgs, err := ops.Peek(ctx, shown)
		if err != nil {
			return fmt.Errorf("list dead letters: %w", err)
		}
		now := time.Now().UTC()
		rows := make([]deadLetter, 0, len(msgs))
		for _, m := range msgs {
			row, err := describeDeadLetter(ctx, e.catalog, b.Ledger, m, now)
			if err != nil {
				return err
			}
			rows = append(rows, row)
		}
		held := len(rows)
		if d, err := ops.Depth(ctx); err == nil {
			held = max(held, d.Visible)
		}
		would := held
		if limit > 0 {
			would = min(held, limit)
		}
		e.set("would_purge", would)
		e.set("dead_letters", rows)
		if would == 0 {
			e.sayf("the dead-letter queue holds no visible message: nothing to purge\n")
			return nil
		}
		if len(rows) > 0 {
			printDeadLetters(e, rows)
		}
		more := ""
		if len(rows) < would {
			more = fmt.Sprintf(" (%d listed)", len(rows))
		}
		return fmt.Errorf("refused: a purge would delete %d message(s)%s for good; nothing deleted. Run 'baton dlq purge%s --yes' to delete them", would, more, maxFlag(limit))
	}
	n, err := ops.Purge(ctx, limit)
	e.set("purged", n)
	if n > 0 || err == nil {
		e.sayf("deleted %d message(s) from the dead-letter queue\n", n)
	}
	if err != nil {
		return fmt.Errorf("purge stopped after %d message(s): %w", n, err)
	}
	if d, err := ops.Depth(ctx); err == nil {
		approx := ""
		if d.Approximate {
			approx = " (approximate)"
		}
		e.set("left", d.Total())
		if d.Total() > 0 {
			e.sayf("%d message(s) left in the dead-letter queue%s (in flight, arrived meanwhile or beyond --max)\n", d.Total(), approx)
		}
	}
	return nil
}

// maxFlag is " --max N" for a limit, "" for none.
func maxFlag(limit int) string {
	if limit > 0 {
		return fmt.Sprintf(" --max %d", limit)
	}
	return ""
}
