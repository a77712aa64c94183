package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/batonhq/baton/internal/fanin"
	"github.com/batonhq/baton/internal/ledger"
)

// ErrUnvouched matches the reason of a message the ledger does not vouch
// for: it is dead-lettered at once and nothing is written.
var ErrUnvouched = errors.New("not vouched for by the ledger")

// vouch decides whether the ledger vouches for the message (invariant 10):
// its tick is not in the future (beyond the job's clock-skew allowance),
// its run exists with that generation, and its fence is one the run's
// record accounts for: at least the fence that opened the generation and
// at most the latest coordinator fence the run recorded (every coordinator
// records its fence before it sends). A
// message of an older generation is superseded: acknowledged, nothing
// done. Anything else unvouched is poison: dead-lettered at once with its
// reason, writing nothing.
//
// The run is read through a per-process cache (RunCache): a run read less
// than runCacheTTL ago answers what it can, and a message it cannot vouch
// for (a newer generation or a higher fence than the cached record) makes
// the consumer read the run again before turning the message away, so a
// newer generation is never mistaken for an unvouched one.
func (c *Consumer) vouch(ctx context.Context, m *messageRun) (verdict, bool) {
	d := m.d
	id, skew := d.key.Run, d.job.Limits.ClockSkew
	if id.Nominal.After(m.now.Add(skew)) {
		return c.unvouched(ctx, m, fmt.Errorf("%w: %s: tick %s is in the future (now %s, allowance %s)",
			ErrUnvouched, d.key, id.Nominal.Format(time.RFC3339), m.now.UTC().Format(time.RFC3339), skew))
	}
	run, cached, err := c.Runs.get(ctx, c.Ledger, id, m.now)
	for {
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			return c.unvouched(ctx, m, fmt.Errorf("%w: %s: the tick has no run", ErrUnvouched, d.key))
		case err != nil:
			return m.fail(StatusFailed, fmt.Errorf("%s: read run: %w", d.key, err)), false
		}
		answers := id.Generation < run.ID.Generation ||
			(id.Generation == run.ID.Generation && d.msg.Fence <= run.Fence)
		if answers || !cached {
			break
		}
		run, cached, err = c.Runs.read(ctx, c.Ledger, id, m.now)
	}
	m.run = run
	if id.Generation == run.ID.Generation {
		d.parts = run.Partitions
	}
	switch {
	case id.Generation < run.ID.Generation:
		c.supersede(ctx, m, run.ID)
		return m.ack(StatusSuperseded), false
	case id.Generation > run.ID.Generation:
		return c.unvouched(ctx, m, fmt.Errorf("%w: %s: generation %d was never opened (the tick's latest is %s)",
			ErrUnvouched, d.key, id.Generation, run.ID))
	case d.msg.Fence > run.Fence:
		return c.unvouched(ctx, m, fmt.Errorf("%w: %s: fence %d is above any fence the run recorded (latest %d)",
			ErrUnvouched, d.key, d.msg.Fence, run.Fence))
	case d.msg.Fence < run.OpenFence:
		return c.unvouched(ctx, m, fmt.Errorf("%w: %s: fence %d is below the fence %d that opened generation %d",
			ErrUnvouched, d.key, d.msg.Fence, run.OpenFence, run.ID.Generation))
	}
	return verdict{}, true
}

// SupersededPrefix begins the reason of an item of an older generation
// ended by a message that arrived after a forced replay superseded it:
// status counts such items per run.
const SupersededPrefix = "superseded by "

// supersede records that the message's item, of a generation a forced
// replay superseded, will not run: the item of the older generation, when
// absent, RUNNING or FAILED, is CANCELLED with a reason naming the current
// run, so that status can count what the replay cut short; for a shard
// message, every item it stands for (its range, or its stored page), as
// their own messages would have. The writes are on the items' own records
// (no record is shared by a run's items). It is bookkeeping: the message
// is acknowledged whatever the writes' outcome.
func (c *Consumer) supersede(ctx context.Context, m *messageRun, current ledger.RunID) {
	keys := []ledger.ItemKey{m.d.key}
	if m.d.msg.IsShard() {
		names, err := c.supersededNames(ctx, m)
		if err != nil {
			m.log.WarnContext(ctx, "superseded shard message acknowledged; its items not found to cancel", slog.String("phase", "vouch"),
				slog.String("current_run", current.String()), slog.Any("error", err))
			return
		}
		keys = keys[:0]
		for _, n := range names {
			keys = append(keys, ledger.ItemKey{Run: m.d.key.Run, Asset: n})
		}
	}
	cancelled := 0
	var failed error
	for _, key := range keys {
		_, err := c.Ledger.Cancel(ctx, ledger.CancelParams{Key: key, Reason: SupersededPrefix + current.String(), Now: m.now})
		switch {
		case err == nil:
			cancelled++
		case errors.Is(err, ledger.ErrTerminal):
		default:
			failed = err
		}
	}
	switch {
	case failed != nil:
		m.log.WarnContext(ctx, "superseded message acknowledged; recording it failed", slog.String("phase", "vouch"),
			slog.String("current_run", current.String()), slog.Int("cancelled", cancelled), slog.Any("error", failed))
	case cancelled > 0:
		m.log.InfoContext(ctx, "superseded message acknowledged; its items cancelled", slog.String("phase", "vouch"),
			slog.String("current_run", current.String()), slog.Int("cancelled", cancelled))
	default:
		m.log.InfoContext(ctx, "superseded message acknowledged", slog.String("phase", "vouch"),
			slog.String("current_run", current.String()))
	}
}

// supersededNames returns the names of the items a superseded shard
// message stands for: its stored page's (of its own, older, generation),
// or its range of the job's items.
func (c *Consumer) supersededNames(ctx context.Context, m *messageRun) ([]string, error) {
	d := m.d
	if d.msg.PageShard() {
		pg, err := c.Pages.get(ctx, c.Ledger, d.key.Run, d.msg.Page)
		if err != nil {
			return nil, fmt.Errorf("%s: read the page: %w", shardName(d.msg), err)
		}
		return pg.Names(), nil
	}
	return c.itemsFunc()(ctx, d.job, m.run, d.msg.Expand.From, d.msg.Expand.To)
}

// unvouched ends the message's run as poison with reason.
func (c *Consumer) unvouched(ctx context.Context, m *messageRun, reason error) (verdict, bool) {
	m.log.WarnContext(ctx, "message not vouched for", slog.String("phase", "vouch"), slog.Any("error", reason))
	v := m.fail(StatusUnvouched, reason)
	v.poison = true
	return v, false
}

// runCacheTTL is how long a run read to vouch for messages answers for
// later messages of its tick.
const runCacheTTL = time.Second

// runCacheMax bounds the runs a consumer keeps.
const runCacheMax = 1024

// RunCache keeps the runs a consumer read to vouch for messages, by tick,
// each for runCacheTTL. A tick's run is read once for the messages that
// ask for it while it is being read (a wave's gates run at once). Safe
// for concurrent use; the zero value is empty.
type RunCache struct {
	mu      sync.Mutex
	runs    map[tickRef]cachedRun
	reading map[tickRef]*runRead // the reads under way
}

// runRead is a read of a tick's run under way: done is closed once run
// and err are set.
type runRead struct {
	done chan struct{}
	run  ledger.Run
	err  error
}

// tickRef is the tick of a run id, as jobspec.TickKey names it (a
// submission's, whatever its nominal time; else the job's at the
// nominal second), without building that name for every message.
type tickRef struct {
	job, submission string
	second          int64
}

func tickOf(id ledger.RunID) tickRef {
	if id.Submission != "" {
		return tickRef{job: id.Job, submission: id.Submission}
	}
	return tickRef{job: id.Job, second: id.Nominal.Unix()}
}

type cachedRun struct {
	run    ledger.Run
	readAt time.Time
}

// get returns the tick's run: the cached record when it was read less than
// runCacheTTL before now, or one read meanwhile for another message
// (cached true: either may predate the message), else a fresh read. A
// nil cache always reads.
func (rc *RunCache) get(ctx context.Context, l ledger.Store, id ledger.RunID, now time.Time) (ledger.Run, bool, error) {
	if rc == nil {
		return rc.read(ctx, l, id, now)
	}
	t := tickOf(id)
	rc.mu.Lock()
	if e, ok := rc.runs[t]; ok && now.Sub(e.readAt) < runCacheTTL && !now.Before(e.readAt) {
		rc.mu.Unlock()
		return e.run, true, nil
	}
	if r := rc.reading[t]; r != nil {
		rc.mu.Unlock()
		select {
		case <-r.done:
		case <-ctx.Done():
			return ledger.Run{}, false, ctx.Err()
		}
		if r.err != nil { // that read's error: this message reads for itself
			return rc.read(ctx, l, id, now)
		}
		return r.run, true, nil
	}
	r := &runRead{done: make(chan struct{})}
	if rc.reading == nil {
		rc.reading = make(map[tickRef]*runRead)
	}
	rc.reading[t] = r
	rc.mu.Unlock()
	run, err := ledger.GetRunOf(ctx, l, id)
	rc.mu.Lock()
	delete(rc.reading, t)
	if err == nil {
		rc.storeLocked(t, run, now)
	}
	r.run, r.err = run, err
	close(r.done)
	rc.mu.Unlock()
	return run, false, err
}

// read reads the tick's run and caches it.
func (rc *RunCache) read(ctx context.Context, l ledger.Store, id ledger.RunID, now time.Time) (ledger.Run, bool, error) {
	run, err := ledger.GetRunOf(ctx, l, id)
	if err != nil || rc == nil {
		return run, false, err
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.storeLocked(tickOf(id), run, now)
	return run, false, nil
}

// storeLocked caches run, the tick t's, read at now. Callers hold mu.
func (rc *RunCache) storeLocked(t tickRef, run ledger.Run, now time.Time) {
	if rc.runs == nil || len(rc.runs) >= runCacheMax {
		rc.runs = make(map[tickRef]cachedRun)
	}
	rc.runs[t] = cachedRun{run: run, readAt: now}
}

// settle settles the shard of the message's item, which just ended, and
// the run when it was the last (fanin.SettleShard): one read of the
// shard's probe (a few of its names), and when they have ended a list of
// the shard and a few more reads and writes, whatever the run's size. The
// last item's consumer sees its shard complete (its reads follow its own
// write), and the marker of the last shard sees every other one marked,
// so a run settles when its last item ends, whoever ends it.
//
// In a batch (Handle), the settle waits for the batch's end, so that the
// items of the batch that share a shard settle it once between them: the
// batch's reads follow all of its writes, and no message of it is
// acknowledged before. A crash before then leaves the messages to be
// delivered again, and a redelivery of an item that ended settles again.
// Failures are logged only: a redelivery or the coordinator settles the
// run later.
func (c *Consumer) settle(ctx context.Context, m *messageRun) {
	if m.d.ended != nil {
		m.d.ended.add(m)
		return
	}
	c.settleShard(ctx, []*messageRun{m})
}

// endedItems collects the items of a batch that ended (settle).
type endedItems struct {
	mu sync.Mutex
	ms []*messageRun
}

func (e *endedItems) add(m *messageRun) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ms = append(e.ms, m)
}

// take returns the items collected, and stops collecting: an item that
// ends later settles at once.
func (e *endedItems) take() []*messageRun {
	e.mu.Lock()
	defer e.mu.Unlock()
	ms := e.ms
	e.ms = nil
	return ms
}

// settleEnded settles the shards of the batch's items that ended, parallel
// runs or pages at once: one fanin.SettleShard per run (per stored page,
// for a run of pages), which settles each distinct shard of its items once.
//
// The settle outlives ctx by at most settleTimeout: the items it settles
// have ended, and their messages are acknowledged whatever it does, so a
// batch that reached its deadline (a poller's batch context ends there)
// still marks their shards rather than leaving the run to the job's next
// trigger. Where the invocation itself is cut off (Lambda), the batch is
// redelivered and its duplicates settle.
func (c *Consumer) settleEnded(ctx context.Context, ms []*messageRun, parallel int) {
	if len(ms) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	type groupKey struct {
		run  string
		page int
	}
	var keys []groupKey
	groups := map[groupKey][]*messageRun{}
	var last ledger.RunID // and run, its text: a batch's items are mostly of one run
	run := ""
	for _, m := range ms {
		if id := m.d.key.Run; run == "" || id != last {
			last, run = id, id.String()
		}
		k := groupKey{run: run, page: -1}
		if m.page != nil {
			k.page = m.page.Index
		}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], m)
	}
	var g errgroup.Group
	g.SetLimit(max(1, parallel))
	for _, k := range keys {
		g.Go(func() error {
			c.settleShard(ctx, groups[k])
			return nil
		})
	}
	_ = g.Wait()
}

// settleTimeout bounds the settle of a batch's ended items past the
// batch's context (see settleEnded).
const settleTimeout = 10 * time.Second

// settleShard settles the shards of ms, items of one run (and of one
// stored page, for a run of pages) that ended (see settle).
func (c *Consumer) settleShard(ctx context.Context, ms []*messageRun) {
	m := ms[0]
	d := m.d
	// The run as the vouch read it: a run fanned out then is still one
	// (or finished since, which the finish's condition finds). One still
	// fanning out then may be a cached record from before the coordinator
	// marked it fanned out (a run whose items all end within the cache's
	// second, as a graph of derived items can): SettleShard reads it again
	// where it would finish (Refresh), which refreshes the cache too, and
	// not for every batch that ends while the fan-out goes on.
	run := m.run
	for _, o := range ms[1:] {
		if run.ID != d.key.Run || (run.State == ledger.RunFanningOut && o.run.ID == d.key.Run) {
			run = o.run
		}
	}
	if run.ID != d.key.Run || (run.State != ledger.RunFannedOut && run.State != ledger.RunFanningOut) {
		return
	}
	refresh := func(ctx context.Context) (ledger.Run, error) {
		fresh, _, err := c.Runs.read(ctx, c.Ledger, d.key.Run, c.now())
		return fresh, err
	}
	var more []string
	for _, o := range ms[1:] {
		more = append(more, o.d.key.Asset)
	}
	fin := &fanin.Finisher{Store: c.Ledger}
	run, err := fanin.SettleShard(ctx, fanin.ShardParams{Ledger: fin, Def: d.job, Run: run, Item: d.key.Asset, Items: more, Page: m.page, Refresh: refresh, Now: c.now()})
	if err != nil {
		m.log.WarnContext(ctx, "settle failed; a redelivery or the coordinator settles the run later", slog.String("phase", "settle"), slog.Any("error", err))
		return
	}
	if run.State.Finished() && run.ID == d.key.Run {
		m.log.DebugContext(ctx, "run settled", slog.String("phase", "settle"), slog.String("state", string(run.State)))
		// The settler that finished the run starts its chains; another
		// one only past fanin.ChainGrace (see there), so that the chained
		// run's messages are sent once.
		if c.ChainsFunc != nil && len(d.job.Chains) > 0 && fanin.StartsChains(run, fin.Won(), c.now()) {
			if err := c.ChainsFunc(ctx, run); err != nil {
				m.log.WarnContext(ctx, "starting chained runs failed; the job's next trigger starts them", slog.String("phase", "chain"), slog.Any("error", err))
			}
		}
	}
}
