package coordinator_test

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
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// t0 is a trigger time: 7 s after the 12:01 tick.
var t0 = time.Date(2026, 11, 21, 12, 1, 7, 0, time.UTC)

// tick is t0's nominal tick.
var tick = time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)

// sender records what it is sent. BeforeFunc, when set, runs first and may
// fail the call (an error) or some entries (a *queue.BatchError: the
// entries it names are not recorded).
type sender struct {
	mu         sync.Mutex
	msgs       []queue.Message
	calls      int
	BeforeFunc func(msgs []queue.Message) error
}

func (s *sender) SendBatch(ctx context.Context, msgs []queue.Message) error {
	if len(msgs) == 0 || len(msgs) > queue.MaxBatch {
		return queue.ErrBatchTooLarge
	}
	var failed map[string]bool
	if s.BeforeFunc != nil {
		if err := s.BeforeFunc(msgs); err != nil {
			be, ok := err.(*queue.BatchError)
			if !ok {
				return err
			}
			failed = map[string]bool{}
			for _, f := range be.Failed {
				failed[f.ID] = true
			}
			s.record(msgs, failed)
			return be
		}
	}
	s.record(msgs, nil)
	return nil
}

func (s *sender) record(msgs []queue.Message, failed map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	for _, m := range msgs {
		if !failed[m.ID] {
			s.msgs = append(s.msgs, m)
		}
	}
}

// keys decodes the recorded messages' item keys, in order.
func (s *sender) keys(t *testing.T) []ledger.ItemKey {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ledger.ItemKey, 0, len(s.msgs))
	for _, m := range s.msgs {
		msg, err := message.Decode(m.Body)
		require.NoError(t, err)
		require.Equal(t, msg.Key, m.Attributes[message.AttrKey])
		k, err := msg.ItemKey()
		require.NoError(t, err)
		// Fan-out sends catalog assets only; a derived item is sent only by
		// a settle, flagged as derived.
		require.Equal(t, k.Asset == fx.DXY, msg.Derived, "derived flag of %s", k)
		out = append(out, k)
	}
	return out
}

// countByAsset counts the recorded messages per asset.
func (s *sender) countByAsset(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, k := range s.keys(t) {
		out[k.Asset]++
	}
	return out
}

// bundle is one test's world: real stores, a recording queue, a clock.
type bundle struct {
	leases lease.Store
	ledger ledger.Store
	queue  *sender
	clock  *clocktest.Clock
	jobs   *baton.Catalog
}

func setup(t *testing.T, defs ...baton.Job) *bundle {
	t.Helper()
	if len(defs) == 0 {
		defs = []baton.Job{fx.Job(nil)}
	}
	leases, led := newStores(t)
	b := &bundle{leases: leases, ledger: led, queue: &sender{}, clock: clocktest.New(t0)}
	for i := range defs {
		if defs[i].Processor == nil {
			defs[i].Processor = baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })
		}
	}
	jobs, err := baton.NewCatalog(defs...)
	require.NoError(t, err)
	b.jobs = jobs
	return b
}

func (b *bundle) coordinator(owner string) *coordinator.Coordinator {
	return &coordinator.Coordinator{
		Leases: b.leases, Ledger: b.ledger, Queue: b.queue, Jobs: b.jobs,
		Owner: owner, NowFunc: b.clock.Now,
	}
}

// bigJob is a job with n assets and a short lease, for long fan-outs.
func bigJob(name string, n int) baton.Job {
	d := baton.Job{
		Name:     name,
		Schedule: "rate(1 minute)",
		Limits: baton.Limits{
			LeaseTTL: time.Minute, ClockSkew: time.Second, ItemLease: 30 * time.Second,
			MaxAttempts: 3, Concurrency: 4, DeadlineMargin: 2 * time.Second,
		},
	}
	for i := range n {
		d.Assets = append(d.Assets, fmt.Sprintf("A%03d", i))
	}
	return d
}
