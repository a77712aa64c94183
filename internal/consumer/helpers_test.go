package consumer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/clocktest"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// tick is the nominal time of the runs under test; t0 a little after it.
var (
	tick = time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	t0   = tick.Add(3 * time.Second)
)

// memQueue is a queue.Sender that keeps what it is sent until taken.
// BeforeFunc, when set, may fail a call before anything is kept.
type memQueue struct {
	mu         sync.Mutex
	pending    []queue.Message
	sent       []queue.Message
	BeforeFunc func(msgs []queue.Message) error
}

func (q *memQueue) SendBatch(ctx context.Context, msgs []queue.Message) error {
	if len(msgs) == 0 || len(msgs) > queue.MaxBatch {
		return queue.ErrBatchTooLarge
	}
	q.mu.Lock()
	before := q.BeforeFunc
	q.mu.Unlock()
	if before != nil {
		if err := before(msgs); err != nil {
			return err
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending = append(q.pending, msgs...)
	q.sent = append(q.sent, msgs...)
	return nil
}

func (q *memQueue) setBefore(f func([]queue.Message) error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.BeforeFunc = f
}

// take removes and returns what was sent since the last take.
func (q *memQueue) take() []queue.Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.pending
	q.pending = nil
	return out
}

func (q *memQueue) all() []queue.Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]queue.Message(nil), q.sent...)
}

// processor counts calls per item key around the reference processor;
// override, when it returns handled, replaces it for a task.
type processor struct {
	mu           sync.Mutex
	calls        map[string]int
	inner        baton.Processor
	overrideFunc func(ctx context.Context, t baton.Task) (result []byte, err error, handled bool)
}

func (p *processor) Process(ctx context.Context, t baton.Task) ([]byte, error) {
	p.mu.Lock()
	p.calls[t.Key.String()]++
	override := p.overrideFunc
	p.mu.Unlock()
	if override != nil {
		if r, err, ok := override(ctx, t); ok {
			return r, err
		}
	}
	return p.inner.Process(ctx, t)
}

func (p *processor) count(key ledger.ItemKey) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[key.String()]
}

func (p *processor) total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.calls {
		n += c
	}
	return n
}

func (p *processor) setOverride(f func(ctx context.Context, t baton.Task) ([]byte, error, bool)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.overrideFunc = f
}

// bundle is one test's world: real stores, in-memory queues, a clock, the
// fx job around a counting processor, and a run fanned out for tick.
type bundle struct {
	ledger   ledger.Store
	effects  effect.Store
	work     *memQueue
	dlq      *memQueue
	clock    *clocktest.Clock
	proc     *processor
	consumer *consumer.Consumer
	run      ledger.RunID
	def      baton.Job
	nextID   int
}

func setup(t *testing.T) *bundle {
	t.Helper()
	led, effects := newStores(t)
	b := &bundle{ledger: led, effects: effects, work: &memQueue{}, dlq: &memQueue{}, clock: clocktest.New(t0), def: fx.Job(nil)}
	b.proc = &processor{calls: map[string]int{}, inner: fx.NewProcessor(nil)}
	b.consumer = &consumer.Consumer{
		Ledger: led, Queue: b.work, Jobs: baton.MustCatalog(b.job()), Effects: effects,
		Owner: "consumer-1", NowFunc: b.clock.Now,
	}
	ctx := context.Background()
	run, _, err := led.OpenRun(ctx, ledger.OpenRunParams{Job: "fx", Nominal: tick, Fence: 1, Now: tick})
	require.NoError(t, err)
	_, err = led.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: len(b.def.Assets), Done: true, Now: tick})
	require.NoError(t, err)
	b.run = run.ID
	return b
}

func (b *bundle) key(asset string) ledger.ItemKey { return ledger.ItemKey{Run: b.run, Asset: asset} }

// message is the fan-out message for asset.
func (b *bundle) message(asset string) queue.Message {
	return message.New(b.key(asset), 1, jobspec.IsDerived(b.def, asset)).QueueMessage()
}

// deliveries turns messages into first deliveries with fresh ids.
func (b *bundle) deliveries(msgs ...queue.Message) []queue.Delivery {
	out := make([]queue.Delivery, 0, len(msgs))
	for _, m := range msgs {
		b.nextID++
		out = append(out, queue.Delivery{
			MessageID: fmt.Sprintf("m%d", b.nextID), ReceiptHandle: fmt.Sprintf("r%d", b.nextID),
			Body: m.Body, Attributes: m.Attributes, ReceiveCount: 1, SentAt: b.clock.Now(),
		})
	}
	return out
}

// assets returns the fan-out messages of the catalog.
func (b *bundle) fanOut() []queue.Message {
	var out []queue.Message
	for _, a := range b.def.Assets {
		out = append(out, b.message(a))
	}
	return out
}

// redeliver returns the deliveries of res.Failed, received once more.
func redeliver(batch []queue.Delivery, res consumer.Result) []queue.Delivery {
	failed := map[string]bool{}
	for _, f := range res.Failed {
		failed[f.MessageID] = true
	}
	var out []queue.Delivery
	for _, d := range batch {
		if failed[d.MessageID] {
			d.ReceiveCount++
			out = append(out, d)
		}
	}
	return out
}

// drain handles batch, then redelivers failures and whatever the consumer
// enqueued, until nothing is left; it fails the test if that takes long.
func (b *bundle) drain(t *testing.T, batch []queue.Delivery) {
	t.Helper()
	for i := 0; len(batch) > 0; i++ {
		require.Less(t, i, 20, "the queue does not drain")
		res := b.consumer.Handle(context.Background(), time.Time{}, batch)
		batch = append(redeliver(batch, res), b.deliveries(b.work.take()...)...)
	}
}

func (b *bundle) item(t *testing.T, asset string) ledger.Item {
	t.Helper()
	it, err := b.ledger.GetItem(context.Background(), b.key(asset))
	require.NoError(t, err)
	return it
}

// statuses maps message id to outcome status.
func statuses(res consumer.Result) map[string]string {
	out := map[string]string{}
	for _, o := range res.Items {
		out[o.MessageID] = o.Status
	}
	return out
}

func failedIDs(fs []consumer.Failure) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.MessageID)
	}
	return out
}

// job is the bundle's definition with its processor.
func (b *bundle) job() baton.Job {
	j := b.def
	j.Processor = b.proc
	return j
}
