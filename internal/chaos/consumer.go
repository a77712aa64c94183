package chaos

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/poller"
	"github.com/batonhq/baton/internal/queue"
)

// Window is a crash window of the consumer: a point between two of its
// writes where a process may die.
type Window string

// The consumer's crash windows (package consumer's steps 4 to 6, and the
// acknowledgement after them).
const (
	AfterClaim           Window = "after-claim"            // claimed, not processed
	BeforeComplete       Window = "before-complete"        // processed (effect written), not completed
	AfterComplete        Window = "after-complete"         // completed, fan-in not checked, not acknowledged
	BeforeDerivedEnqueue Window = "before-derived-enqueue" // last input succeeded, derived item not enqueued
	BeforeDelete         Window = "before-delete"          // every verdict recorded, nothing acknowledged
)

// Windows lists every crash window.
var Windows = []Window{AfterClaim, BeforeComplete, AfterComplete, BeforeDerivedEnqueue, BeforeDelete}

// batchPlan is the fault of one consumer batch: it kills the batch at its
// window's first chance, after which every call of the batch fails.
type batchPlan struct {
	mu     sync.Mutex
	window Window // "": the batch lives
	killed bool
}

func (p *batchPlan) before(op, _ string) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.killed:
		return 0, errKilled
	case p.window == BeforeComplete && op == opComplete,
		p.window == BeforeDerivedEnqueue && op == opSendDerived:
		p.killed = true
		return 0, errKilled
	}
	return 0, nil
}

func (p *batchPlan) after(_ int, op, _ string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.killed: // died while the call ran: its caller never learns the result
		return errKilled
	case p.window == AfterClaim && op == opClaim,
		p.window == AfterComplete && op == opComplete:
		p.killed = true
		return errKilled
	}
	return nil
}

// kill kills the batch now.
func (p *batchPlan) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.killed = true
}

func (p *batchPlan) isKilled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killed
}

// dice is a random source safe for concurrent use.
type dice struct {
	mu sync.Mutex
	r  *rand.Rand
}

func newDice(seed uint64) *dice {
	return &dice{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// float returns a number uniform in [0, 1).
func (d *dice) float() float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.r.Float64()
}

// intN returns a number uniform in [0, n).
func (d *dice) intN(n int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.r.IntN(n)
}

// durationIn returns a duration uniform in [lo, hi).
func (d *dice) durationIn(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return lo + time.Duration(d.r.Int64N(int64(hi-lo)))
}

// consumerOptions configure one consumer (a process, or its stand-in in
// the test process).
type consumerOptions struct {
	Owner   string
	Journal *Journal
	Latency time.Duration
	Bulk    bool          // the chaos job is Bulk (Job)
	Skew    time.Duration // added to the real clock
	Seed    uint64
	// Duplicates and Kills are Config's; Calm, when it reports true, stops
	// both (the run is settling).
	Duplicates, Kills float64
	Calm              func() bool
	// Cover kills the first chance of every window once.
	Cover bool

	WrapLedger   func(ledger.Store) ledger.Store
	WrapHandle   func(HandleFunc) HandleFunc
	NoDeadLetter bool
}

// consumerRun is one consumer: an engine's consumer fed by a poller as the
// engine feeds it, with the chaos receiver in between and a fault on every
// batch.
type consumerRun struct {
	o      consumerOptions
	dice   *dice
	rcv    *receiver
	handle HandleFunc

	mu      sync.Mutex
	uncover []Window // windows Cover has yet to kill
}

// runConsumer runs a consumer on b until ctx ends; batches in flight
// finish.
func runConsumer(ctx context.Context, b backend.Backend, o consumerOptions) error {
	now := func() time.Time { return time.Now().Add(o.Skew) }
	if o.Calm == nil {
		o.Calm = func() bool { return false }
	}
	raw := b.Work
	l := b.Ledger
	if o.WrapLedger != nil {
		l = o.WrapLedger(l)
	}
	b.Ledger = journalLedger{Store: l, journal: o.Journal}
	if o.NoDeadLetter {
		b.DeadLetter = nil
	}
	// The consumer hides each failed message for its delay (a held
	// item's until its claim can be taken over, else retryDelay), as the
	// local runtime's do; the poller leaves them.
	b.Work = dupHandles{b.Work}
	eng, err := exec.New(faulty(b), exec.Options{
		Catalog: baton.MustCatalog(Job(o.Latency, o.Journal, o.Bulk)), Owner: o.Owner,
		NowFunc: now, BatchTimeout: batchTimeout, RetryDelay: retryDelay,
	})
	if err != nil {
		return err
	}
	c := &consumerRun{o: o, dice: newDice(o.Seed), handle: eng.Consumer.Handle}
	c.rcv = &receiver{q: raw, dice: c.dice, journal: o.Journal, dropped: map[string]bool{}, rate: func() float64 {
		if o.Calm() {
			return 0
		}
		return o.Duplicates
	}}
	if o.WrapHandle != nil {
		c.handle = o.WrapHandle(c.handle)
	}
	if o.Cover {
		c.uncover = append([]Window(nil), Windows...)
	}
	wait := b.ReceiveWait
	if wait <= 0 {
		wait = 500 * time.Millisecond
	}
	p := &poller.Poller{
		Receiver: c.rcv, HandleFunc: c.handleBatch, BatchSize: batchSize, Visibility: visibility,
		Timeout: batchTimeout, Concurrency: pollers, Wait: wait, NowFunc: now,
	}
	return p.Run(ctx)
}

// plan decides the fate of the next batch: killed at a random window with
// probability Kills, else at the next window Cover has yet to kill.
func (c *consumerRun) plan() *batchPlan {
	if c.o.Calm() {
		return &batchPlan{}
	}
	if c.dice.float() < c.o.Kills {
		return &batchPlan{window: Windows[c.dice.intN(len(Windows))]}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.uncover) > 0 {
		return &batchPlan{window: c.uncover[0]}
	}
	return &batchPlan{}
}

// covered records that w killed a batch.
func (c *consumerRun) covered(w Window) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, u := range c.uncover {
		if u == w {
			c.uncover = append(c.uncover[:i], c.uncover[i+1:]...)
			return
		}
	}
}

// handleBatch is the poller's handler: the consumer under the batch's
// fault. A killed batch acknowledges nothing and changes no visibility:
// its messages come back when their visibility timeout ends, as a dead
// process's do.
func (c *consumerRun) handleBatch(ctx context.Context, deadline time.Time, msgs []queue.Delivery) []string {
	if !c.o.Calm() {
		c.o.Journal.Add(Record{Kind: KindBatch})
	}
	plan := c.plan()
	started := time.Now()
	res := c.handle(withFault(ctx, plan), deadline, msgs)
	if plan.window == BeforeDelete {
		plan.kill()
	}
	ids := make([]string, 0, len(msgs))
	if plan.isKilled() {
		c.rcv.drop(msgs)
		c.o.Journal.Add(Record{Kind: KindKill, Window: string(plan.window)})
		c.covered(plan.window)
		for _, m := range msgs {
			ids = append(ids, m.MessageID)
		}
		return ids
	}
	failed := make(map[string]bool, len(res.Failed))
	for _, f := range res.Failed {
		failed[f.MessageID] = true
		ids = append(ids, f.MessageID)
	}
	for _, it := range res.Items {
		c.o.Journal.Add(Record{Kind: KindOutcome, Key: it.Key, Status: it.Status, Acked: !failed[it.MessageID], At: started.UnixNano()})
		for _, in := range it.Ran { // a bulk shard's items, acknowledged with it
			c.o.Journal.Add(Record{Kind: KindOutcome, Key: in.Key, Status: in.Status, Acked: !failed[it.MessageID], At: started.UnixNano()})
		}
	}
	return ids
}

// dupSuffix marks the receipt handle of a delivery handed out a second
// time, so that its acknowledgement can be told from the first one's.
const dupSuffix = "#chaos-dup"

// receiver stands between the queue and a consumer's poller. It hands a
// share of the deliveries out twice: half again to a later receive, half
// as a copy sent back to the queue. It drops the acknowledgements and
// visibility changes of killed batches.
type receiver struct {
	q       queue.Receiver
	dice    *dice
	journal *Journal
	rate    func() float64

	mu      sync.Mutex
	stash   []queue.Delivery // handed out again by the next receives
	dropped map[string]bool  // receipt handles of killed batches
}

var _ queue.Receiver = (*receiver)(nil)

func (r *receiver) Receive(ctx context.Context, p queue.ReceiveParams) ([]queue.Delivery, error) {
	r.mu.Lock()
	if n := min(p.Max, len(r.stash)); n > 0 {
		out := append([]queue.Delivery(nil), r.stash[:n]...)
		r.stash = r.stash[n:]
		r.mu.Unlock()
		return out, nil
	}
	r.mu.Unlock()
	ds, err := r.q.Receive(ctx, p)
	if err != nil || len(ds) == 0 {
		return ds, err
	}
	rate := r.rate()
	var copies []queue.Message
	var again []queue.Delivery
	for _, d := range ds {
		switch x := r.dice.float(); {
		case x < rate/2:
			d.ReceiptHandle += dupSuffix
			again = append(again, d)
		case x < rate:
			copies = append(copies, queue.Message{Body: d.Body, Attributes: d.Attributes})
		}
	}
	if len(copies) > 0 {
		if s, ok := r.q.(queue.Sender); ok {
			_, _ = queue.SendAll(context.WithoutCancel(ctx), s, copies, nil)
		}
	}
	if len(again) > 0 {
		r.mu.Lock()
		r.stash = append(r.stash, again...)
		r.mu.Unlock()
	}
	if rate > 0 {
		r.journal.Add(Record{Kind: KindReceived, N: len(ds)})
	}
	if n := len(copies) + len(again); n > 0 {
		r.journal.Add(Record{Kind: KindDup, N: n})
	}
	return ds, nil
}

// drop makes the acknowledgement of msgs a no-op: their batch was killed.
func (r *receiver) drop(msgs []queue.Delivery) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		r.dropped[m.ReceiptHandle] = true
	}
}

// dropping reports whether handle's acknowledgement is dropped (once).
func (r *receiver) dropping(handle string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dropped[handle] {
		delete(r.dropped, handle)
		return true
	}
	return false
}

func (r *receiver) Delete(ctx context.Context, receiptHandle string) error {
	if r.dropping(receiptHandle) {
		return nil
	}
	return r.q.Delete(ctx, strings.TrimSuffix(receiptHandle, dupSuffix))
}

func (r *receiver) ChangeVisibility(ctx context.Context, p queue.ChangeVisibilityParams) error {
	if r.dropping(p.ReceiptHandle) {
		return nil
	}
	p.ReceiptHandle = strings.TrimSuffix(p.ReceiptHandle, dupSuffix)
	return r.q.ChangeVisibility(ctx, p)
}

// dupHandles is the work queue as the consumer's own visibility changes
// (heartbeats, retry delays) reach it: a duplicate delivery's receipt
// handle names the message it copies.
type dupHandles struct{ backend.Queue }

func (q dupHandles) ChangeVisibility(ctx context.Context, p queue.ChangeVisibilityParams) error {
	p.ReceiptHandle = strings.TrimSuffix(p.ReceiptHandle, dupSuffix)
	return q.Queue.ChangeVisibility(ctx, p)
}

// journalLedger journals every completion the ledger accepts, and every
// run a consumer finishes.
type journalLedger struct {
	ledger.Store
	journal *Journal
}

func (l journalLedger) Complete(ctx context.Context, p ledger.CompleteParams) (ledger.Item, error) {
	it, err := l.Store.Complete(ctx, p)
	if err == nil {
		l.journal.Add(Record{Kind: KindCommit, Key: p.Key.String(), Attempt: p.Attempt})
	}
	return it, err
}

func (l journalLedger) FinishRun(ctx context.Context, p ledger.FinishRunParams) (ledger.Run, error) {
	run, err := l.Store.FinishRun(ctx, p)
	if err == nil {
		l.journal.Add(Record{Kind: KindSettled, Key: p.ID.String()})
	}
	return run, err
}
