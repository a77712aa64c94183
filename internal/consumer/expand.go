package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/telemetry"
)

// StatusExpanded is the status of a shard message whose item messages
// were sent: acknowledged.
const StatusExpanded = "expanded"

// expandParallel is the number of batches an expansion keeps in flight,
// as the coordinator's fan-out does.
const expandParallel = 10

// ItemsFunc returns the names of the items [from, to) of run's item list
// (the order the coordinator fans out in), for shard messages.
type ItemsFunc func(ctx context.Context, j baton.Job, run ledger.Run, from, to int) ([]string, error)

// CatalogItems is the default ItemsFunc: the job's catalog assets
// [from, to).
func CatalogItems(_ context.Context, j baton.Job, _ ledger.Run, from, to int) ([]string, error) {
	if from < 0 || from >= to || to > len(j.Assets) {
		return nil, fmt.Errorf("items %d to %d: job %s has %d assets", from, to, j.Name, len(j.Assets))
	}
	return j.Assets[from:to], nil
}

// expand handles a shard message (hierarchical fan-out): once the ledger
// vouches for it as for an item message (its run, generation and fence),
// it sends the item messages of its range, with its fence (version 1; for
// a page shard, version 2 naming the page), and is acknowledged. A failed send leaves it to be redelivered, and the
// redelivery sends the range again: the items' claims absorb the
// duplicates (a claim of a RUNNING or terminal item writes nothing), so
// every shard is expanded exactly once in effect. A range that does not
// start with the message's item (the run's list is not what the
// coordinator sent from) is poison: dead-lettered with the reason.
func (c *Consumer) expand(ctx context.Context, deadline time.Time, m *messageRun) verdict {
	d := m.d
	names, v, ok := c.shardItems(ctx, deadline, m, "expanded")
	if !ok {
		return v
	}
	msgs := make([]queue.Message, len(names))
	for i, n := range names {
		msgs[i] = itemMessage(d.msg, ledger.ItemKey{Run: d.key.Run, Asset: n}).QueueMessage()
	}
	telemetry.Carry(d.d.Attributes, msgs) // the items link to the run that sent the shard
	sent, err := queue.SendAll(ctx, c.Queue, msgs, &queue.SendAllOptions{Parallel: expandParallel})
	if err != nil {
		return m.fail(StatusFailed, fmt.Errorf("%s: sent %d of %d item messages: %w", shardName(d.msg), sent, len(msgs), err))
	}
	m.log.DebugContext(ctx, "shard expanded", append([]any{slog.String("phase", "expand")}, shardAttrs(d.msg)...)...)
	return m.ack(StatusExpanded)
}

// itemMessage is the item message of key that the shard message shard
// stands for: version 1 with the shard's fence, or, for a page shard,
// version 2 naming its page.
func itemMessage(shard message.Message, key ledger.ItemKey) message.Message {
	if shard.PageShard() {
		return message.NewPaged(key, shard.Fence, shard.Page)
	}
	return message.New(key, shard.Fence, false)
}

// shardName names the shard message msg in errors: its key and its range
// or page.
func shardName(msg message.Message) string {
	if msg.PageShard() {
		return fmt.Sprintf("page shard %s (page %d)", msg.Key, msg.Page)
	}
	return fmt.Sprintf("shard %s [%d, %d)", msg.Key, msg.Expand.From, msg.Expand.To)
}

// shardAttrs are the log attributes of the shard message msg: its range,
// or its page.
func shardAttrs(msg message.Message) []any {
	if msg.PageShard() {
		return []any{slog.Int("page", msg.Page)}
	}
	return []any{slog.Int("from", msg.Expand.From), slog.Int("to", msg.Expand.To)}
}

// shardItems gates a shard message as an item's (ctx, a stop, the
// deadline less the job's margin, the vouch) and returns the names of its
// range; what is to be done ("expanded", "run") names the refusal. ok is
// false when the message stops here with v.
func (c *Consumer) shardItems(ctx context.Context, deadline time.Time, m *messageRun, what string) (names []string, v verdict, ok bool) {
	d, r := m.d, m.d.msg.Expand
	if err := ctx.Err(); err != nil {
		return nil, m.fail(StatusNotStarted, fmt.Errorf("shard %s not %s: %w", d.msg.Key, what, err)), false
	}
	if c.stopped() {
		return nil, m.fail(StatusReleased, fmt.Errorf("shard %s not %s: %w", d.msg.Key, what, ErrStopped)), false
	}
	if !deadline.IsZero() && !m.now.Before(deadline.Add(-d.job.Limits.DeadlineMargin)) {
		return nil, m.fail(StatusNotStarted, fmt.Errorf("shard %s not %s: %s left before the deadline, margin %s",
			d.msg.Key, what, deadline.Sub(m.now), d.job.Limits.DeadlineMargin)), false
	}
	if c.Queue == nil {
		return nil, m.fail(StatusFailed, fmt.Errorf("shard %s not %s: the consumer has no queue to send its items to", d.msg.Key, what)), false
	}
	if v, ok := c.vouch(ctx, m); !ok {
		return nil, v, false
	}
	if d.msg.PageShard() {
		return c.pageItems(ctx, m)
	}
	names, err := c.itemsFunc()(ctx, d.job, m.run, r.From, r.To)
	switch {
	case err != nil:
		v := m.fail(StatusMalformed, fmt.Errorf("shard %s [%d, %d): %w", d.msg.Key, r.From, r.To, err))
		v.poison = true
		return nil, v, false
	case len(names) == 0 || names[0] != d.key.Asset:
		first := ""
		if len(names) > 0 {
			first = names[0]
		}
		v := m.fail(StatusMalformed, fmt.Errorf("shard %s [%d, %d): item %d of the run is %q, not %q",
			d.msg.Key, r.From, r.To, r.From, first, d.key.Asset))
		v.poison = true
		return nil, v, false
	}
	return names, verdict{}, true
}

// itemsFunc is c.ItemsFunc, or CatalogItems when it is nil.
func (c *Consumer) itemsFunc() ItemsFunc {
	if c.ItemsFunc != nil {
		return c.ItemsFunc
	}
	return CatalogItems
}

// pageItems returns the names of the items of the stored page a page
// shard message stands for (read through the consumer's page cache, which
// the items' own messages then find). A page that is not stored is
// unvouched, as an item message's; a page whose first item is not the
// message's is poison: dead-lettered with the reason.
func (c *Consumer) pageItems(ctx context.Context, m *messageRun) (names []string, v verdict, ok bool) {
	d := m.d
	pg, err := c.Pages.get(ctx, c.Ledger, d.key.Run, d.msg.Page)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		v, _ := c.unvouched(ctx, m, fmt.Errorf("%w: %s: page %d of the run's item list is not stored", ErrUnvouched, shardName(d.msg), d.msg.Page))
		return nil, v, false
	case err != nil:
		return nil, m.fail(StatusFailed, fmt.Errorf("%s: read the page: %w", shardName(d.msg), err)), false
	case len(pg.Items) == 0 || pg.Items[0].Name != d.key.Asset:
		first := ""
		if len(pg.Items) > 0 {
			first = pg.Items[0].Name
		}
		v := m.fail(StatusMalformed, fmt.Errorf("%s: the page's first item is %q, not %q", shardName(d.msg), first, d.key.Asset))
		v.poison = true
		return nil, v, false
	}
	return pg.Names(), verdict{}, true
}
