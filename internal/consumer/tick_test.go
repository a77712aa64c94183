package consumer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/sqlite"
)

// pipe is a queue that hands what it is sent to the next take.
type pipe struct {
	mu      sync.Mutex
	pending []queue.Message
	n       int
}

func (p *pipe) SendBatch(ctx context.Context, msgs []queue.Message) error {
	if len(msgs) == 0 || len(msgs) > queue.MaxBatch {
		return queue.ErrBatchTooLarge
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending = append(p.pending, msgs...)
	return nil
}

func (p *pipe) take(max int) []queue.Delivery {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := min(max, len(p.pending))
	out := make([]queue.Delivery, 0, n)
	for _, m := range p.pending[:n] {
		p.n++
		out = append(out, queue.Delivery{MessageID: fmt.Sprintf("m%d", p.n), Body: m.Body, Attributes: m.Attributes, ReceiveCount: 1})
	}
	p.pending = p.pending[n:]
	return out
}

// One tick of the reference job end to end, in a bubble of fake time: the
// coordinator fans the seven assets out, the consumer ingests them in
// parallel (each fetch takes 1.6 s) and derives DXY, the run settles
// complete. Every asset is done one fetch after the trigger, not one fetch
// per position in a sequential loop.
func TestOneTickEndToEnd(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		db := openDB(t)
		leases, led, effects := sqlite.NewLeaseStore(db), sqlite.NewLedgerStore(db), sqlite.NewEffectStore(db)
		q := &pipe{}
		const latency = 1600 * time.Millisecond
		cat := fx.Catalog(&fx.Options{Latency: latency})
		coord := &coordinator.Coordinator{Leases: leases, Ledger: led, Queue: q, Jobs: cat, Owner: "coord"}
		cons := &consumer.Consumer{Ledger: led, Queue: q, Jobs: cat, Effects: effects, Owner: "worker"}
		ctx := context.Background()

		nominal := time.Now().UTC().Truncate(time.Minute).Add(time.Minute)
		time.Sleep(time.Until(nominal) + 700*time.Millisecond) // the trigger arrives 0.7 s late
		trigger := time.Now()

		sum, err := coord.Run(ctx, coordinator.Trigger{Job: "fx", At: trigger, Deadline: trigger.Add(30 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, coordinator.OutcomeOpened, sum.Outcome)
		require.Equal(t, nominal, sum.Nominal)
		require.Equal(t, 7, sum.Enqueued)

		res := cons.Handle(ctx, time.Now().Add(30*time.Second), q.take(queue.MaxBatch))
		require.Empty(t, res.Failed)
		require.Len(t, res.Items, 7)
		// Store writes that wait for the file lock move the bubble's clock
		// by a few milliseconds; a sequential loop would take 7 × 1.6 s.
		const slack = 100 * time.Millisecond
		for _, o := range res.Items {
			require.Equal(t, consumer.StatusSucceeded, o.Status, o.Key)
			require.GreaterOrEqual(t, o.Processing, latency, o.Key)
			require.Less(t, o.Processing, latency+slack, o.Key)
			require.GreaterOrEqual(t, o.TickToDone, 700*time.Millisecond+latency, o.Key)
			require.Less(t, o.TickToDone, 700*time.Millisecond+latency+slack, "%s: staleness does not grow with position", o.Key)
		}
		require.Less(t, time.Since(trigger), latency+slack, "the seven fetches ran at once")

		// Inputs completing together may each have enqueued DXY: the copies
		// race for one claim, in no set order.
		res = cons.Handle(ctx, time.Now().Add(30*time.Second), q.take(queue.MaxBatch))
		require.NotEmpty(t, res.Items)
		succeeded := 0
		for _, o := range res.Items {
			require.Equal(t, fx.DXY, o.Asset)
			if o.Status == consumer.StatusSucceeded {
				succeeded++
			} else {
				require.Contains(t, []string{consumer.StatusDuplicate, consumer.StatusHeld}, o.Status)
			}
		}
		require.Equal(t, 1, succeeded, "one copy of DXY is processed")

		run, err := coord.Settle(ctx, "fx", nominal)
		require.NoError(t, err)
		require.Equal(t, ledger.RunComplete, run.State)
		require.Equal(t, 8, run.Succeeded)

		items, err := led.ListItems(ctx, run.ID)
		require.NoError(t, err)
		require.Len(t, items, 8)
		for _, it := range items {
			require.Equal(t, ledger.ItemSucceeded, it.State, it.Key.Asset)
			require.Equal(t, 1, it.Attempt, it.Key.Asset)
			_, eff := readBar(t, effects, it.Key.Asset, nominal)
			require.Equal(t, it.Key.Run.Generation, eff.Generation, "the bar is fenced by the generation")
			require.Equal(t, it.Attempt, eff.Attempt)
		}
	})
}
