package cli

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/batonhq/baton/internal/ops"
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
type deadLetter = ops.DeadLetter

func defineDLQList(e *env, fs *pflag.FlagSet) runFunc {
	var limit int
	fs.IntVar(&limit, "max", 100, "list at most this many messages")
	return func(ctx context.Context, _ []string) error { return dlqList(ctx, e, limit) }
}

func dlqList(ctx context.Context, e *env, limit int) error {
	if limit < 1 {
		return usagef("--max must be at least 1, got %d", limit)
	}
	b, err := e.backend.openReadOnly(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	now := time.Now().UTC()
	op, err := ops.New(b, e.catalog, &ops.Options{Owner: operatorOwner(), NowFunc: func() time.Time { return now }})
	if err != nil {
		return err
	}
	rows, err := op.DeadLetters(ctx, limit)
	if err != nil {
		return err
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
	if limit < 0 {
		return usagef("--max must not be negative, got %d", limit)
	}
	b, op, err := openOperator(ctx, &e.backend, e.catalog)
	if err != nil {
		return err
	}
	defer b.Close()
	res, err := op.Redrive(ctx, limit)
	if errors.Is(err, ops.ErrNoDeadLetterQueue) {
		return err
	}
	e.set("moved", res.Moved)
	if res.Moved > 0 || err == nil {
		e.sayf("moved %d message(s) from the dead-letter queue to the work queue; items already terminal are acknowledged without running\n", res.Moved)
	}
	if err != nil {
		return err
	}
	if left := res.Left; left.Known && left.Messages > 0 {
		approx := ""
		if left.Approximate {
			approx = " (approximate)"
		}
		e.set("left", left.Messages)
		e.sayf("%d message(s) left in the dead-letter queue%s (in flight or beyond --max)\n", left.Messages, approx)
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
	b, op, err := openOperator(ctx, &e.backend, e.catalog)
	if err != nil {
		return err
	}
	defer b.Close()
	if b.DeadLetter == nil {
		_, err := op.Purge(ctx, limit) // the error that says so
		return err
	}
	e.set("purged", 0)
	if !yes {
		p, err := op.PreviewPurge(ctx, limit)
		if err != nil {
			return err
		}
		e.set("would_purge", p.Would)
		e.set("dead_letters", p.Letters)
		if p.Would == 0 {
			e.sayf("the dead-letter queue holds no visible message: nothing to purge\n")
			return nil
		}
		if len(p.Letters) > 0 {
			printDeadLetters(e, p.Letters)
		}
		more := ""
		if len(p.Letters) < p.Would {
			more = fmt.Sprintf(" (%d listed)", len(p.Letters))
		}
		return fmt.Errorf("refused: a purge would delete %d message(s)%s for good; nothing deleted. Run 'baton dlq purge%s --yes' to delete them", p.Would, more, maxFlag(limit))
	}
	res, err := op.Purge(ctx, limit)
	e.set("purged", res.Purged)
	if res.Purged > 0 || err == nil {
		e.sayf("deleted %d message(s) from the dead-letter queue\n", res.Purged)
	}
	if err != nil {
		return err
	}
	if left := res.Left; left.Known {
		approx := ""
		if left.Approximate {
			approx = " (approximate)"
		}
		e.set("left", left.Messages)
		if left.Messages > 0 {
			e.sayf("%d message(s) left in the dead-letter queue%s (in flight, arrived meanwhile or beyond --max)\n", left.Messages, approx)
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
