package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/fanin"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/telemetry"
)

// ErrItems matches the error of a fan-out stopped by the job's items
// function: it failed, or returned an item that cannot be stored (a bad
// name, names out of order, a payload over baton.MaxPayload).
var ErrItems = errors.New("items function")

// fanOutPages fans out a run of a job whose items are computed when it
// opens (baton.Job.Items): page by page, each page of the run's list is
// read from the ledger, or, the first time, filled from the items
// function and stored (ledger.Store.PutPage, written once), and its items
// are sent as version 2 messages naming their page, or, for the pages of
// a large list (see pageShard), the page as one page shard message that a
// consumer expands (or runs in place, for a bulk job), so that the
// coordinator sends O(pages) messages, not O(items). The cursor is a
// position, page×ledger.PageItems + offset, checkpointed about every
// Checkpoint messages; a resumed fan-out reads the pages already stored
// and asks the items function only for what follows them. Memory holds
// one page of the function's and one chunk of messages, whatever the
// run's size.
func (c *Coordinator) fanOutPages(ctx context.Context, t *tickRun, run ledger.Run) error {
	items := t.job.Items
	if t.items != nil {
		items = t.items
	}
	if items == nil {
		return fmt.Errorf("fan out %s: no items to store: the run's list was not stored when it opened", run.ID)
	}
	j, sum, log := t.job, t.sum, t.log
	chunk := c.Checkpoint
	if chunk <= 0 {
		chunk = DefaultCheckpoint
	}
	fanStart := c.now()
	src := &pageSource{ledger: c.Ledger, items: items, run: run.ID, parent: t.parent, now: c.now}
	cursor := run.Cursor
	for {
		now := c.now()
		if stop := stopReason(j.Limits, t.tr.Deadline, t.start, now); stop != "" {
			sum.Stopped = stop
			log.WarnContext(ctx, "fan-out stopped; the next invocation resumes", slog.String("phase", "fan-out"),
				slog.String("stopped", stop), slog.Int("cursor", cursor), slog.Duration("duration", now.Sub(fanStart)))
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("fan out %s at %d: %w", run.ID, cursor, err)
		}
		if err := c.renewIfDue(ctx, log, j.Limits, t.hold, t.tr.Deadline, now); err != nil {
			return fmt.Errorf("fan out %s at %d: %w", run.ID, cursor, err)
		}
		next, done, err := c.sendPages(ctx, t, src, run.ID, cursor, chunk)
		if err != nil {
			return err
		}
		cursor = next
		if done {
			break
		}
	}
	sum.Total, sum.FannedOutAt = cursor, c.now()
	log.InfoContext(ctx, "fanned out", slog.String("phase", "fan-out"), slog.Int("enqueued", sum.Enqueued),
		slog.Int("pages", src.pagesRead+src.pagesWritten), slog.Int("pages_written", src.pagesWritten),
		slog.Int("item_calls", src.calls), slog.Duration("duration", c.now().Sub(fanStart)))
	c.settleFannedOut(ctx, t, run.ID)
	return nil
}

// settleFannedOut settles a stored list's run right after its fan-out:
// its items that ended while it fanned out marked their shards, and the
// pass climbs what they could not (the page count was not known yet); a
// run whose items all ended before its fan-out was recorded finishes
// here. Failures are logged only (the job's next trigger settles it).
func (c *Coordinator) settleFannedOut(ctx context.Context, t *tickRun, id ledger.RunID) {
	run, err := ledger.GetRunOf(ctx, c.Ledger, id)
	fin := &fanin.Finisher{Store: c.Ledger}
	if err == nil && run.State == ledger.RunFannedOut {
		run, err = fanin.Settle(ctx, fanin.SettleParams{Ledger: fin, Queue: c.Queue, Def: t.job, Run: run, Sweep: true, Now: c.now()})
	}
	if err != nil {
		t.log.WarnContext(ctx, "settle after the fan-out failed; the job's next trigger settles the run", slog.String("phase", "settle"), slog.Any("error", err))
		return
	}
	if fanin.StartsChains(run, fin.Won(), c.now()) {
		c.chainsQuietly(ctx, t.log, run)
	}
}

// maxChunkPages bounds the pages of one chunk of a fan-out of pages:
// each page may be filled from the items function and stored, so the
// deadline and the lease are checked at least every maxChunkPages pages.
const maxChunkPages = 64

// pageShard reports whether page p of the run t fans out goes out as a
// page shard message (message.NewPageShard) rather than as its items'
// messages: when the job is bulk (its consumers run a page's items in
// place), when it declares ExpectedItems of at least the expansion
// threshold (Coordinator.ExpandFrom), and otherwise for the pages past
// that threshold, so that a small list goes out as item messages (no
// expansion hop) and a large one as O(pages) messages whatever it
// declared. A negative ExpandFrom turns page shards off, as it does
// catalog shards, and so does a submission to a priority class
// (Submission.Class): its items must reach the class's queue, and a
// consumer sends what it expands or hands over to the job's. The answer
// depends on the job, the class and p only, and a page shard stands for
// whole pages, so a resumed fan-out covers every item whichever way it
// sends a page.
func (c *Coordinator) pageShard(t *tickRun, p int) bool {
	from := c.ExpandFrom
	if from == 0 {
		from = DefaultExpandFrom
	}
	switch {
	case from < 0, t.queue != nil:
		return false
	case t.job.Bulk, t.job.ExpectedItems >= from:
		return true
	}
	return p*ledger.PageItems >= from
}

// sendPages sends the run's items from position cursor on, whole pages
// until their messages stand for at least chunk items, or to the list's
// end, at most maxChunkPages pages, and checkpoints the position past
// the messages sent. A chunk counts items, not messages, whether they go
// as item messages or page shards: the pages come from the items function
// as the fan-out goes, and what a chunk holds back waits for its last
// page, so a list of page shards is sent and checkpointed as often as
// one of item messages.
func (c *Coordinator) sendPages(ctx context.Context, t *tickRun, src *pageSource, id ledger.RunID, cursor, chunk int) (next int, done bool, err error) {
	fence, sum := t.hold.lease.Fence, t.sum
	p, off := cursor/ledger.PageItems, cursor%ledger.PageItems
	var msgs []queue.Message
	var ends []int   // the position after each message
	var covers []int // the items each message stands for
	var shard []bool // whether each message is a page shard
	final := false
	for pages, items := 0, 0; items < chunk && pages < maxChunkPages; pages++ {
		page, err := src.page(ctx, p)
		if err != nil {
			return cursor, false, fmt.Errorf("fan out %s at %d: page %d: %w", id, cursor, p, err)
		}
		switch {
		case off >= len(page.Items):
		case c.pageShard(t, p):
			// The whole page, even resumed part-way: the claims of the
			// items already sent absorb their second messages.
			first := ledger.ItemKey{Run: id, Asset: page.Items[0].Name}
			msgs = append(msgs, message.NewPageShard(first, fence, p).QueueMessage())
			ends = append(ends, p*ledger.PageItems+len(page.Items))
			covers = append(covers, len(page.Items)-off)
			shard = append(shard, true)
			items += len(page.Items) - off
		default:
			for i := off; i < len(page.Items); i++ {
				key := ledger.ItemKey{Run: id, Asset: page.Items[i].Name}
				msgs = append(msgs, message.NewPaged(key, fence, p).QueueMessage())
				ends = append(ends, p*ledger.PageItems+i+1)
				covers = append(covers, 1)
				shard = append(shard, false)
			}
			items += len(page.Items) - off
		}
		if page.Final {
			final = true
			break
		}
		if len(ends) > 0 {
			ends[len(ends)-1] = (p + 1) * ledger.PageItems // a page sent whole moves to the next
		}
		p, off = p+1, 0
	}
	var sent int
	var sendErr error
	if len(msgs) > 0 {
		telemetry.Stamp(ctx, msgs)
		sent, sendErr = queue.SendAll(ctx, c.sender(t), msgs, &queue.SendAllOptions{Parallel: sendParallel})
		for i := range sent {
			sum.Enqueued += covers[i]
			if shard[i] {
				sum.ShardMessages++
			}
		}
	}
	if sent == 0 && sendErr != nil {
		return cursor, false, fmt.Errorf("fan out %s at %d: %w", id, cursor, sendErr)
	}
	next = cursor
	if sent > 0 {
		next = ends[sent-1]
	}
	if sent == 0 && len(msgs) == 0 && !final {
		next = p * ledger.PageItems // pages with nothing left to send
	}
	done = final && sendErr == nil && sent == len(msgs)
	if _, err := c.Ledger.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: id, Fence: fence, Cursor: next, Done: done, Now: c.now()}); err != nil {
		if sendErr != nil {
			err = fmt.Errorf("%w (after a send error: %v)", err, sendErr)
		}
		return cursor, false, fmt.Errorf("fan out %s: checkpoint cursor %d: %w", id, next, err)
	}
	sum.Cursor = next
	t.log.DebugContext(ctx, "fan-out checkpoint", slog.String("phase", "fan-out"), slog.Int("cursor", next), slog.Bool("done", done))
	if sendErr != nil {
		return next, done, fmt.Errorf("fan out %s at %d: %w", id, next, sendErr)
	}
	return next, done, nil
}

// pageSource reads the stored pages of a run's item list, and fills and
// stores the pages not stored yet from the job's items function. It holds
// one page of the function's at a time.
type pageSource struct {
	ledger ledger.Store
	items  baton.ItemsFunc
	run    ledger.RunID
	parent ledger.RunID // the run whose finish started this one (a chain); zero: none
	now    func() time.Time

	prev       *ledger.Page // the page before the one asked for next, when known
	positioned bool         // buf, cursor, next, exhausted and last follow prev
	buf        []baton.Item // what is left of the function's current page
	cursor     string       // the cursor that produced buf
	nextCursor string       // its Next
	exhausted  bool         // the function's last page was fetched
	last       string       // the last name taken

	calls, pagesRead, pagesWritten int
}

// page returns page p of the list: the stored one, or one filled from
// the items function and stored now.
func (s *pageSource) page(ctx context.Context, p int) (ledger.Page, error) {
	pg, err := s.ledger.GetPage(ctx, s.run, p)
	if err == nil {
		s.pagesRead++
		s.keep(pg)
		return pg, nil
	}
	if !errors.Is(err, ledger.ErrNotFound) {
		return ledger.Page{}, err
	}
	if !s.positioned {
		if err := s.position(ctx, p); err != nil {
			return ledger.Page{}, err
		}
	}
	params, err := s.fill(ctx, p)
	if err != nil {
		return ledger.Page{}, err
	}
	pg, err = s.ledger.PutPage(ctx, params)
	if errors.Is(err, ledger.ErrTerminal) {
		// Stored meanwhile (a coordinator of an older fence): the stored
		// page is the list.
		s.positioned = false
		s.keep(pg)
		return pg, nil
	}
	if err != nil {
		return ledger.Page{}, err
	}
	s.pagesWritten++
	s.prev = &pg
	return pg, nil
}

// keep remembers pg as the page before the next one; the function's
// position no longer follows it.
func (s *pageSource) keep(pg ledger.Page) {
	s.prev, s.positioned = &pg, false
}

// position sets the items function's position right after page p-1: at
// the list's start for page 0, else at the cursor that produced page
// p-1's last item, skipping the items up to it.
func (s *pageSource) position(ctx context.Context, p int) error {
	s.buf, s.nextCursor, s.exhausted, s.last = nil, "", false, ""
	if p == 0 {
		if err := s.fetch(ctx, ""); err != nil {
			return err
		}
		s.positioned = true
		return nil
	}
	prev := s.prev
	if prev == nil || prev.Index != p-1 {
		pg, err := s.ledger.GetPage(ctx, s.run, p-1)
		if err != nil {
			return fmt.Errorf("read page %d to resume after it: %w", p-1, err)
		}
		s.pagesRead++
		prev = &pg
	}
	if prev.Final {
		return fmt.Errorf("page %d asked for after the final page %d", p, prev.Index)
	}
	if len(prev.Items) == 0 {
		return fmt.Errorf("page %d is empty and not final", prev.Index)
	}
	s.last = prev.Items[len(prev.Items)-1].Name
	if err := s.fetch(ctx, prev.Resume); err != nil {
		return err
	}
	for {
		for len(s.buf) > 0 && s.buf[0].Name <= s.last {
			s.buf = s.buf[1:]
		}
		if len(s.buf) > 0 || s.exhausted {
			break
		}
		if err := s.fetch(ctx, s.nextCursor); err != nil {
			return err
		}
	}
	s.positioned = true
	return nil
}

// fetch asks the items function for the page at cursor.
func (s *pageSource) fetch(ctx context.Context, cursor string) error {
	s.calls++
	page, err := s.items(ctx, baton.ItemsRequest{Run: s.run, Cursor: cursor, Parent: s.parent})
	if err != nil {
		return fmt.Errorf("%w: cursor %q: %w", ErrItems, cut(cursor), err)
	}
	switch {
	case len(page.Next) > 1024:
		return fmt.Errorf("%w: cursor %q: next cursor of %d bytes, at most 1024", ErrItems, cut(cursor), len(page.Next))
	case page.Next != "" && page.Next == cursor:
		return fmt.Errorf("%w: cursor %q: the next cursor is the same cursor (the list would never end)", ErrItems, cut(cursor))
	}
	s.buf, s.cursor, s.nextCursor, s.exhausted = page.Items, cursor, page.Next, page.Next == ""
	return nil
}

// more makes buf non-empty unless the list has ended.
func (s *pageSource) more(ctx context.Context) error {
	for len(s.buf) == 0 && !s.exhausted {
		if err := s.fetch(ctx, s.nextCursor); err != nil {
			return err
		}
	}
	return nil
}

// fill takes page p's items from the function: up to ledger.PageItems,
// and no more than ledger.MaxPageBytes encoded; the page is final when
// the function has no item after them.
func (s *pageSource) fill(ctx context.Context, p int) (ledger.PutPageParams, error) {
	params := ledger.PutPageParams{Run: s.run, Index: p, Now: s.now()}
	if s.parent.Job != "" {
		params.Parent = s.parent.String()
	}
	size := 1
	for len(params.Items) < ledger.PageItems {
		if err := s.more(ctx); err != nil {
			return params, err
		}
		if len(s.buf) == 0 {
			break
		}
		it := s.buf[0]
		if err := baton.ValidName("item", it.Name); err != nil {
			return params, fmt.Errorf("%w: cursor %q: %w", ErrItems, cut(s.cursor), err)
		}
		if s.last != "" && it.Name <= s.last {
			return params, fmt.Errorf("%w: cursor %q: item %q follows %q: names must be in strictly ascending byte order, each page after the one before",
				ErrItems, cut(s.cursor), it.Name, s.last)
		}
		if len(it.Payload) > baton.MaxPayload {
			return params, fmt.Errorf("%w: item %q: payload of %d bytes, at most %d (baton.MaxPayload)", ErrItems, it.Name, len(it.Payload), baton.MaxPayload)
		}
		pi := ledger.PageItem{Name: it.Name, Payload: it.Payload}
		if size+ledger.PageItemSize(pi) > ledger.MaxPageBytes {
			break
		}
		size += ledger.PageItemSize(pi)
		params.Items = append(params.Items, pi)
		params.Resume = s.cursor
		s.last, s.buf = it.Name, s.buf[1:]
	}
	if err := s.more(ctx); err != nil {
		return params, err
	}
	params.Final = len(s.buf) == 0
	return params, nil
}

// cut bounds a cursor quoted in an error.
func cut(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
