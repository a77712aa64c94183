package consumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

func TestHandleRunsTheTick(t *testing.T) {
	t.Parallel()
	b := setup(t)
	batch := b.deliveries(b.fanOut()...)
	res := b.consumer.Handle(context.Background(), time.Time{}, batch)
	require.Empty(t, res.Failed)
	require.Empty(t, res.DeadLettered)
	require.Len(t, res.Items, 7)
	for i, o := range res.Items {
		require.Equal(t, batch[i].MessageID, o.MessageID, "outcomes follow the batch order")
		require.Equal(t, consumer.StatusSucceeded, o.Status, o.Key)
		require.Equal(t, 1, o.Attempt)
		require.Equal(t, t0.Sub(tick), o.TickToDone)
		require.Equal(t, b.key(o.Asset).String(), o.Key)
	}

	// The fan-in enqueued DXY (once per input that saw all six succeeded).
	derived := b.work.take()
	require.NotEmpty(t, derived)
	for _, m := range derived {
		msg, err := message.Decode(m.Body)
		require.NoError(t, err)
		require.True(t, msg.Derived)
		require.Equal(t, b.key(fx.DXY).String(), msg.Key)
		require.EqualValues(t, 1, msg.Fence)
	}
	b.drain(t, b.deliveries(derived...))

	dxy := b.item(t, fx.DXY)
	require.Equal(t, ledger.ItemSucceeded, dxy.State)
	require.Equal(t, 1, b.proc.count(b.key(fx.DXY)))
	var r fx.Bar
	require.NoError(t, json.Unmarshal(dxy.Result, &r))
	require.InDelta(t, 104, r.Close, 6, "a plausible dollar index")
	bar, _ := readBar(t, b.effects, fx.DXY, tick)
	require.Equal(t, r, bar)
}

// Invariant 4: every message delivered three times (concurrently, in any
// order) → the processor runs once per item.
func TestDuplicateDeliveriesProcessOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var batch []queue.Delivery
	for range 3 {
		batch = append(batch, b.deliveries(b.fanOut()...)...)
	}
	rand.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })

	res := b.consumer.Handle(context.Background(), time.Time{}, batch)
	got := map[string]int{}
	for _, o := range res.Items {
		got[o.Status]++
	}
	require.Equal(t, 7, got[consumer.StatusSucceeded], "statuses %v", got)
	require.Equal(t, 14, got[consumer.StatusDuplicate]+got[consumer.StatusHeld], "statuses %v", got)
	require.Len(t, res.Failed, got[consumer.StatusHeld], "held copies are redelivered")

	// Redeliver the held copies and every derived message, three times each.
	next := redeliver(batch, res)
	for _, m := range b.work.take() {
		next = append(next, b.deliveries(m, m, m)...)
	}
	b.drain(t, next)

	for _, a := range append(append([]string(nil), b.def.Assets...), fx.DXY) {
		require.Equal(t, 1, b.proc.count(b.key(a)), "processor calls for %s", a)
		it := b.item(t, a)
		require.Equal(t, ledger.ItemSucceeded, it.State, a)
		require.Equal(t, 1, it.Attempt, a)
	}
	require.Equal(t, 8, b.proc.total())
}

// A consumer that crashed after its claim: once the item lease (plus skew)
// is over, a redelivery claims attempt 2 and completes; the crashed owner's
// completion and its bar write are then rejected.
func TestAbandonedClaimIsTakenOver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	lim := b.def.Limits
	key := b.key("EURUSD")
	crashed, err := b.ledger.Claim(ctx, ledger.ClaimParams{Key: key, Owner: "crashed", LeaseUntil: t0.Add(lim.ItemLease), Fence: 1, Now: t0})
	require.NoError(t, err)
	require.Equal(t, 1, crashed.Attempt)

	// While its lease is live the item is held: redelivered later.
	b.clock.Set(t0.Add(lim.ItemLease + lim.ClockSkew - time.Millisecond))
	batch := b.deliveries(b.message("EURUSD"))
	res := b.consumer.Handle(ctx, time.Time{}, batch)
	require.Equal(t, []string{batch[0].MessageID}, failedIDs(res.Failed))
	require.Equal(t, consumer.StatusHeld, res.Items[0].Status)
	require.Zero(t, b.proc.count(key))

	b.clock.Set(t0.Add(lim.ItemLease + lim.ClockSkew))
	res = b.consumer.Handle(ctx, time.Time{}, redeliver(batch, res))
	require.Empty(t, res.Failed)
	require.Equal(t, consumer.StatusSucceeded, res.Items[0].Status)
	require.Equal(t, 2, res.Items[0].Attempt)
	it := b.item(t, "EURUSD")
	require.Equal(t, ledger.ItemSucceeded, it.State)
	require.Equal(t, 2, it.Attempt)
	require.Equal(t, "consumer-1", it.Owner)

	// The crashed owner wakes up: its completion is rejected…
	_, err = b.ledger.Complete(ctx, ledger.CompleteParams{Key: key, Owner: "crashed", Attempt: 1, Result: []byte(`{}`), Now: b.clock.Now()})
	require.Error(t, err)
	require.True(t, errors.Is(err, ledger.ErrTerminal) || errors.Is(err, ledger.ErrConflict), "got %v", err)
	// …and so is its side effect: the bar carries attempt 2.
	_, eff := readBar(t, b.effects, "EURUSD", tick)
	require.Equal(t, 2, eff.Attempt)
	stale := fx.NewProcessor(nil)
	_, err = stale.Process(ctx, baton.Task{Key: key, Asset: "EURUSD", Nominal: tick, Attempt: 1, Fence: 1,
		Effects: effect.Bind(b.effects, fx.Name, key.Run.Generation, 1, nil)})
	require.ErrorIs(t, err, baton.ErrStale)
	require.True(t, baton.IsPermanent(err))
	_, eff = readBar(t, b.effects, "EURUSD", tick)
	require.Equal(t, 2, eff.Attempt, "the stale write changed nothing")
}

// Invariant 7: malformed messages are reported (or dead-lettered) with a
// reason naming the problem, and the rest of the batch goes through.
func TestMalformedMessages(t *testing.T) {
	t.Parallel()
	bad := []struct {
		name, body, want string
	}{
		{"not json", `hello`, "not a baton item message"},
		{"wrong version", `{"v":5,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1}`, "version 5, want 1, 2 (item), 3 (shard) or 4 (page shard)"},
		{"bad key", `{"v":1,"key":"EURUSD","fence":1}`, `invalid item key "EURUSD"`},
		{"unknown job", `{"v":1,"key":"crypto@2026-11-21T12:01:00Z#1/BTCUSD","fence":1}`, `unknown job "crypto"`},
		{"unknown asset", `{"v":1,"key":"fx@2026-11-21T12:01:00Z#1/BTCUSD","fence":1}`, `no asset or derived item "BTCUSD"`},
		{"page shard for constant items", `{"v":4,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1,"page":0}`, "the message is a page shard of a stored item list"},
	}
	for _, withDLQ := range []bool{false, true} {
		name := "without dead-letter queue"
		if withDLQ {
			name = "with dead-letter queue"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			if withDLQ {
				b.consumer.DeadLetter = b.dlq
			}
			var msgs []queue.Message
			msgs = append(msgs, b.message("EURUSD"))
			for _, c := range bad {
				msgs = append(msgs, queue.Message{Body: []byte(c.body), Attributes: map[string]string{"case": c.name}})
			}
			msgs = append(msgs, b.message("GBPUSD"))
			batch := b.deliveries(msgs...)

			res := b.consumer.Handle(context.Background(), time.Time{}, batch)
			st := statuses(res)
			require.Equal(t, consumer.StatusSucceeded, st[batch[0].MessageID])
			require.Equal(t, consumer.StatusSucceeded, st[batch[len(batch)-1].MessageID])

			reported := res.Failed
			if withDLQ {
				require.Empty(t, res.Failed, "dead-lettered messages are acknowledged")
				reported = res.DeadLettered
			} else {
				require.Empty(t, res.DeadLettered)
			}
			require.Len(t, reported, len(bad))
			for i, c := range bad {
				d := batch[i+1]
				require.Equal(t, d.MessageID, reported[i].MessageID, c.name)
				require.Equal(t, consumer.StatusMalformed, st[d.MessageID], c.name)
				require.ErrorContains(t, reported[i].Err, c.want, c.name)
				require.ErrorContains(t, reported[i].Err, d.MessageID, c.name)
			}
			require.ErrorIs(t, reported[0].Err, message.ErrMalformed)
			require.ErrorIs(t, reported[3].Err, baton.ErrUnknownJob)
			require.ErrorIs(t, reported[4].Err, consumer.ErrUnknownAsset)

			forwarded := b.dlq.all()
			if !withDLQ {
				require.Empty(t, forwarded)
				return
			}
			require.Len(t, forwarded, len(bad))
			byCase := map[string]queue.Message{}
			for _, m := range forwarded {
				byCase[m.Attributes["case"]] = m
			}
			for _, c := range bad {
				m, ok := byCase[c.name]
				require.True(t, ok, c.name)
				require.Equal(t, c.body, string(m.Body), "the body is forwarded as received")
				require.Contains(t, m.Attributes[message.AttrError], c.want)
			}
		})
	}
}

// Invariant 5: a CANCELLED item is never overwritten; its delivery is
// acknowledged without processing, and its dependents are cancelled.
func TestCancelledNeverOverwritten(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.ledger.Cancel(ctx, ledger.CancelParams{Key: b.key("EURUSD"), Reason: "operator", Now: t0})
	require.NoError(t, err)

	batch := b.deliveries(b.message("EURUSD"), b.message("EURUSD"))
	res := b.consumer.Handle(ctx, time.Time{}, batch)
	require.Empty(t, res.Failed)
	for _, o := range res.Items {
		require.Equal(t, consumer.StatusDuplicate, o.Status)
	}
	require.Zero(t, b.proc.count(b.key("EURUSD")))
	it := b.item(t, "EURUSD")
	require.Equal(t, ledger.ItemCancelled, it.State)
	require.Equal(t, "operator", it.Error)

	dxy := b.item(t, fx.DXY)
	require.Equal(t, ledger.ItemCancelled, dxy.State)
	require.Equal(t, "input EURUSD is CANCELLED", dxy.Error)
	require.Empty(t, b.work.all(), "nothing enqueued for a doomed derived item")
}

// Invariant 6: the consumer "crashes" between the last input's completion
// and the derived enqueue (the enqueue fails). The input's message is not
// acknowledged; its redelivery finds SUCCEEDED, re-runs the check, and DXY
// is enqueued and succeeds exactly once.
func TestFanInCrashWindow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.work.setBefore(func([]queue.Message) error { return errors.New("process killed") })

	batch := b.deliveries(b.fanOut()...)
	res := b.consumer.Handle(ctx, time.Time{}, batch)
	require.NotEmpty(t, res.Failed, "the input whose fan-in failed is not acknowledged")
	for _, f := range res.Failed {
		require.ErrorContains(t, f.Err, "process killed")
	}
	for _, a := range b.def.Assets {
		require.Equal(t, ledger.ItemSucceeded, b.item(t, a).State)
	}
	require.Empty(t, b.work.all())
	_, err := b.ledger.GetItem(ctx, b.key(fx.DXY))
	require.ErrorIs(t, err, ledger.ErrNotFound)

	b.work.setBefore(nil)
	again := redeliver(batch, res)
	// A redelivery coming back at once (as a storm's held copies do) does
	// not enqueue…
	res = b.consumer.Handle(ctx, time.Time{}, again)
	require.Empty(t, b.work.all(), "an immediate redelivery does not re-run the enqueue")
	// …the redelivery after the visibility timeout (past the item lease)
	// does.
	b.clock.Advance(b.def.Limits.ItemLease)
	res = b.consumer.Handle(ctx, time.Time{}, again)
	require.Empty(t, res.Failed)
	for _, o := range res.Items {
		require.Equal(t, consumer.StatusDuplicate, o.Status)
	}
	derived := b.work.take()
	require.NotEmpty(t, derived, "the redelivery re-ran the fan-in check")
	b.drain(t, b.deliveries(append(derived, derived...)...))

	require.Equal(t, ledger.ItemSucceeded, b.item(t, fx.DXY).State)
	require.Equal(t, 1, b.proc.count(b.key(fx.DXY)))
	for _, a := range b.def.Assets {
		require.Equal(t, 1, b.proc.count(b.key(a)), a)
	}
}

// A derived message that arrives before its inputs succeeded is held
// without a claim (no attempt spent).
func TestDerivedBeforeInputsIsHeld(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	batch := b.deliveries(b.message(fx.DXY))
	res := b.consumer.Handle(ctx, time.Time{}, batch)
	require.Len(t, res.Failed, 1)
	require.Equal(t, consumer.StatusHeld, res.Items[0].Status)
	require.ErrorContains(t, res.Failed[0].Err, "EURUSD is absent")
	_, err := b.ledger.GetItem(ctx, b.key(fx.DXY))
	require.ErrorIs(t, err, ledger.ErrNotFound)
	require.Zero(t, b.proc.total())
}

// Items that would start after deadline − margin are not started.
func TestDeadlineNotStarted(t *testing.T) {
	t.Parallel()
	t.Run("whole batch", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// 1 s left, margin 2 s.
		res := b.consumer.Handle(context.Background(), t0.Add(time.Second), b.deliveries(b.fanOut()...))
		require.Len(t, res.Failed, 7)
		for _, o := range res.Items {
			require.Equal(t, consumer.StatusNotStarted, o.Status)
		}
		require.ErrorContains(t, res.Failed[0].Err, "not started")
		require.Zero(t, b.proc.total())
		items, err := b.ledger.ListItems(context.Background(), b.run)
		require.NoError(t, err)
		require.Empty(t, items, "nothing claimed")
	})
	t.Run("mid batch", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.def.Limits.Concurrency = 1
		b.consumer.Jobs = baton.MustCatalog(b.job())
		// Each item takes 4 s; 10 s left, margin 2 s: items start at 0 s and 4 s.
		b.proc.setOverride(func(ctx context.Context, t baton.Task) ([]byte, error, bool) {
			b.clock.Advance(4 * time.Second)
			return nil, nil, false
		})
		res := b.consumer.Handle(context.Background(), t0.Add(10*time.Second), b.deliveries(b.fanOut()...))
		got := map[string]int{}
		for _, o := range res.Items {
			got[o.Status]++
		}
		require.Equal(t, map[string]int{consumer.StatusSucceeded: 2, consumer.StatusNotStarted: 5}, got)
		require.Len(t, res.Failed, 5)
		require.Equal(t, 2, b.proc.total())
	})
}

func TestProcessorErrors(t *testing.T) {
	t.Parallel()
	t.Run("permanent → DEAD, acknowledged, dependents cancelled", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.proc.setOverride(func(ctx context.Context, t baton.Task) ([]byte, error, bool) {
			if t.Asset == "USDJPY" {
				return nil, baton.Permanent(errors.New("provider: unknown symbol")), true
			}
			return nil, nil, false
		})
		res := b.consumer.Handle(context.Background(), time.Time{}, b.deliveries(b.fanOut()...))
		require.Empty(t, res.Failed)
		st := map[string]string{}
		for _, o := range res.Items {
			st[o.Asset] = o.Status
		}
		require.Equal(t, consumer.StatusDead, st["USDJPY"])
		it := b.item(t, "USDJPY")
		require.Equal(t, ledger.ItemDead, it.State)
		require.Contains(t, it.Error, "unknown symbol")
		require.Equal(t, 1, it.Attempt)
		dxy := b.item(t, fx.DXY)
		require.Equal(t, ledger.ItemCancelled, dxy.State)
		require.Equal(t, "input USDJPY is DEAD", dxy.Error)
	})
	t.Run("transient → retried until MaxAttempts, then DEAD", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.proc.setOverride(func(ctx context.Context, t baton.Task) ([]byte, error, bool) {
			if t.Asset == "XAUUSD" {
				return nil, errors.New("provider timeout"), true
			}
			return nil, nil, false
		})
		batch := b.deliveries(b.message("XAUUSD"))
		for attempt := 1; attempt < b.def.Limits.MaxAttempts; attempt++ {
			res := b.consumer.Handle(context.Background(), time.Time{}, batch)
			require.Len(t, res.Failed, 1, "attempt %d", attempt)
			require.Equal(t, consumer.StatusFailed, res.Items[0].Status)
			require.Equal(t, attempt, res.Items[0].Attempt)
			require.ErrorContains(t, res.Failed[0].Err, "provider timeout")
			require.Equal(t, ledger.ItemFailed, b.item(t, "XAUUSD").State)
			batch = redeliver(batch, res)
		}
		res := b.consumer.Handle(context.Background(), time.Time{}, batch)
		require.Empty(t, res.Failed, "DEAD is acknowledged")
		require.Equal(t, consumer.StatusDead, res.Items[0].Status)
		it := b.item(t, "XAUUSD")
		require.Equal(t, ledger.ItemDead, it.State)
		require.Equal(t, b.def.Limits.MaxAttempts, it.Attempt)
		require.Equal(t, b.def.Limits.MaxAttempts, b.proc.count(b.key("XAUUSD")))
	})
	t.Run("panic → FAILED", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.proc.setOverride(func(ctx context.Context, t baton.Task) ([]byte, error, bool) { panic("nil map") })
		res := b.consumer.Handle(context.Background(), time.Time{}, b.deliveries(b.message("EURUSD")))
		require.Len(t, res.Failed, 1)
		require.ErrorContains(t, res.Failed[0].Err, "processor panicked: nil map")
		require.Equal(t, ledger.ItemFailed, b.item(t, "EURUSD").State)
	})
}

// A message still failing at MaxReceives is forwarded with its reason and
// acknowledged.
func TestMaxReceivesDeadLetters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.consumer.DeadLetter, b.consumer.MaxReceives = b.dlq, 3
	b.proc.setOverride(func(ctx context.Context, t baton.Task) ([]byte, error, bool) {
		return nil, errors.New("provider timeout"), true
	})
	batch := b.deliveries(b.message("EURUSD"))
	for range 2 {
		res := b.consumer.Handle(context.Background(), time.Time{}, batch)
		require.Len(t, res.Failed, 1)
		require.Empty(t, res.DeadLettered)
		batch = redeliver(batch, res)
	}
	require.Equal(t, 3, batch[0].ReceiveCount)
	res := b.consumer.Handle(context.Background(), time.Time{}, batch)
	require.Empty(t, res.Failed)
	require.Len(t, res.DeadLettered, 1)
	require.ErrorContains(t, res.DeadLettered[0].Err, "provider timeout")
	fwd := b.dlq.all()
	require.Len(t, fwd, 1)
	require.Equal(t, string(batch[0].Body), string(fwd[0].Body))
	require.Contains(t, fwd[0].Attributes[message.AttrError], "provider timeout")
	require.Equal(t, b.key("EURUSD").String(), fwd[0].Attributes[message.AttrKey])
	require.Equal(t, ledger.ItemFailed, b.item(t, "EURUSD").State, "the item stays retryable for a redrive")
}

// The claim and the processor's context end at the deadline minus the
// margin, so the verdict is recorded before the invocation is cut off.
func TestProcessingEndsBeforeDeadlineMargin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	deadline := t0.Add(10 * time.Second) // margin 2 s; item lease 30 s
	var procDeadline time.Time
	b.proc.setOverride(func(ctx context.Context, t baton.Task) ([]byte, error, bool) {
		procDeadline, _ = ctx.Deadline()
		return nil, nil, false
	})
	res := b.consumer.Handle(context.Background(), deadline, b.deliveries(b.message("EURUSD")))
	require.Empty(t, res.Failed)
	want := deadline.Add(-b.def.Limits.DeadlineMargin)
	require.False(t, procDeadline.IsZero())
	// The processor's context runs on the real clock for the lease's length.
	require.LessOrEqual(t, time.Until(procDeadline), want.Sub(t0)+time.Second)
	it := b.item(t, "EURUSD")
	require.Equal(t, ledger.ItemSucceeded, it.State)

	// The lease the claim took ends at deadline − margin.
	b2 := setup(t)
	b2.proc.setOverride(func(ctx context.Context, tk baton.Task) ([]byte, error, bool) {
		held, err := b2.ledger.GetItem(ctx, tk.Key)
		require.NoError(t, err)
		require.True(t, held.LeaseUntil.Equal(want), "lease until %s, want %s", held.LeaseUntil, want)
		return nil, nil, false
	})
	res = b2.consumer.Handle(context.Background(), deadline, b2.deliveries(b2.message("EURUSD")))
	require.Empty(t, res.Failed)
}

// Fan-in once: with every input delivered three times at once, the
// derived item is enqueued by the completion that made it ready, not once
// per copy (at most twice when two last inputs complete together).
func TestFanInStormEnqueuesOnce(t *testing.T) {
	t.Parallel()
	for round := range 5 {
		b := setup(t)
		var msgs []queue.Message
		for range 3 {
			for _, a := range fx.Assets {
				msgs = append(msgs, b.message(a))
			}
		}
		// The inputs complete one after the other, each with its three
		// copies at once; copies that found their item held come back at
		// once (count 2), as a storm's do. The derived item is not consumed
		// meanwhile.
		for i := range fx.Assets {
			batch := b.deliveries(msgs[i], msgs[i+len(fx.Assets)], msgs[i+2*len(fx.Assets)])
			for j := 0; len(batch) > 0; j++ {
				require.Less(t, j, 20, "the storm does not drain")
				res := b.consumer.Handle(context.Background(), time.Time{}, batch)
				batch = redeliver(batch, res)
			}
		}
		enqueued := 0
		for _, m := range b.work.all() {
			if strings.Contains(string(m.Body), `"derived":true`) {
				enqueued++
			}
		}
		require.GreaterOrEqual(t, enqueued, 1, "round %d: DXY was enqueued", round)
		require.LessOrEqual(t, enqueued, 2, "round %d: DXY enqueued %d times for one run", round, enqueued)
	}
}

// A message whose item is held by a live claim at its last receive is sent
// again as a new message and acknowledged, not dead-lettered: the claim
// may be a dead consumer's, taken from this very message (received twice,
// as SQS may deliver it), and then no other message would ever finish the
// item.
func TestHeldAtMaxReceivesIsRequeued(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.consumer.DeadLetter, b.consumer.MaxReceives = b.dlq, 3
	ctx := context.Background()
	lim := b.def.Limits
	key := b.key("EURUSD")
	_, err := b.ledger.Claim(ctx, ledger.ClaimParams{Key: key, Owner: "crashed", LeaseUntil: t0.Add(lim.ItemLease), Fence: 1, Now: t0})
	require.NoError(t, err)

	batch := b.deliveries(b.message("EURUSD"))
	batch[0].Attributes["other"] = "kept"
	batch[0].ReceiveCount = 3
	res := b.consumer.Handle(ctx, time.Time{}, batch)
	require.Empty(t, res.Failed, "acknowledged")
	require.Empty(t, res.DeadLettered)
	require.Empty(t, b.dlq.all())
	require.Equal(t, consumer.StatusRequeued, res.Items[0].Status)
	again := b.work.take()
	require.Len(t, again, 1, "sent again")
	require.Equal(t, string(batch[0].Body), string(again[0].Body))
	require.Equal(t, batch[0].Attributes, again[0].Attributes)

	// The new message, received once the dead owner's claim has lapsed,
	// finishes the item.
	b.clock.Set(t0.Add(lim.ItemLease + lim.ClockSkew))
	res = b.consumer.Handle(ctx, time.Time{}, b.deliveries(again...))
	require.Empty(t, res.Failed)
	require.Equal(t, consumer.StatusSucceeded, res.Items[0].Status)
	require.Equal(t, ledger.ItemSucceeded, b.item(t, "EURUSD").State)

	// A message failing for another reason at its last receive is still
	// dead-lettered: an item whose attempt failed.
	b.proc.setOverride(func(_ context.Context, t baton.Task) ([]byte, error, bool) {
		return nil, errors.New("provider down"), t.Asset == "GBPUSD"
	})
	failing := b.deliveries(b.message("GBPUSD"))
	failing[0].ReceiveCount = 3
	res = b.consumer.Handle(ctx, time.Time{}, failing)
	require.Len(t, res.DeadLettered, 1)
	require.Equal(t, consumer.StatusFailed, res.Items[0].Status)
	require.Empty(t, b.work.take())
}

// A derived item's message that comes before its inputs succeeded (an
// early 'replay item', a copy sent by hand) is early, not poison: at its
// last receive it is sent again rather than dead-lettered, and once its
// inputs have succeeded the item runs, leaving no dead letter behind.
func TestDerivedBeforeInputsAtMaxReceivesIsRequeued(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.consumer.DeadLetter, b.consumer.MaxReceives = b.dlq, 3
	ctx := context.Background()
	batch := b.deliveries(b.message(fx.DXY))
	var res consumer.Result
	for receive := 1; receive <= 2; receive++ { // one receive before its last
		batch[0].ReceiveCount = receive
		res = b.consumer.Handle(ctx, time.Time{}, batch)
		require.Empty(t, res.DeadLettered, "receive %d", receive)
	}
	require.Empty(t, res.Failed, "acknowledged one receive before its last")
	require.Equal(t, consumer.StatusRequeued, res.Items[0].Status)
	again := b.work.take()
	require.Len(t, again, 1, "sent again as a new message")
	require.Equal(t, string(batch[0].Body), string(again[0].Body))
	_, err := b.ledger.GetItem(ctx, b.key(fx.DXY))
	require.ErrorIs(t, err, ledger.ErrNotFound, "no attempt spent")

	// The inputs succeed (their fan-in enqueues DXY too); the requeued
	// message and fan-in's run DXY once between them.
	b.drain(t, b.deliveries(append(b.fanOut(), again...)...))
	require.Equal(t, ledger.ItemSucceeded, b.item(t, fx.DXY).State)
	require.Equal(t, 1, b.proc.count(b.key(fx.DXY)))
	require.Empty(t, b.dlq.all(), "no dead letter for an item that succeeded")
}

// A dead-letter reason never carries a password a processor's error
// quoted (a DSN, a URL with credentials): people read reasons.
func TestDeadLetterReasonIsRedacted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.consumer.DeadLetter, b.consumer.MaxReceives = b.dlq, 1
	b.proc.setOverride(func(ctx context.Context, t baton.Task) ([]byte, error, bool) {
		return nil, errors.New("connect postgres://quotes:hunter2-pw@db:5432/quotes: refused (password=hunter2-pw)"), true
	})
	res := b.consumer.Handle(context.Background(), time.Time{}, b.deliveries(b.message("EURUSD")))
	require.Len(t, res.DeadLettered, 1)
	fwd := b.dlq.all()
	require.Len(t, fwd, 1)
	reason := fwd[0].Attributes[message.AttrError]
	require.NotContains(t, reason, "hunter2-pw")
	require.Contains(t, reason, "postgres://quotes:[REDACTED]@db:5432/quotes: refused (password=[REDACTED])")
}

// TestHandleMalformed: a delivery whose envelope was unusable is
// dead-lettered whole with its reason (marked malformed) and acknowledged;
// without a dead-letter queue it is reported failed, to be delivered
// again, never dropped. Nothing is written to the ledger.
func TestHandleMalformed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := queue.Delivery{MessageID: "ps-1", Body: []byte(`{"message":{"data":"%%%"}}`), ReceiveCount: 1}
	reason := errors.New("Pub/Sub envelope: illegal base64 data")

	res := b.consumer.HandleMalformed(context.Background(), d, reason)
	require.Empty(t, res.DeadLettered)
	require.Equal(t, []string{"ps-1"}, failedIDs(res.Failed), "no dead-letter queue: delivered again")
	require.Equal(t, consumer.StatusMalformed, res.Items[0].Status)

	b.consumer.DeadLetter = b.dlq
	res = b.consumer.HandleMalformed(context.Background(), d, reason)
	require.Empty(t, res.Failed)
	require.Len(t, res.DeadLettered, 1)
	require.ErrorIs(t, res.DeadLettered[0].Err, message.ErrMalformed)
	dead := b.dlq.take()
	require.Len(t, dead, 1)
	require.Equal(t, string(d.Body), string(dead[0].Body), "the envelope whole")
	require.Equal(t, "message ps-1: malformed message: Pub/Sub envelope: illegal base64 data", dead[0].Attributes[message.AttrError])
}

// A message whose item is held by a live claim backs off: the retry
// delay doubled at each receive, up to when the claim can be taken over
// (its lease and the skew allowance, plus a tenth). Redelivered every
// retry delay, it would spend its receives into the dead-letter queue
// while a dead consumer's claim lasts.
func TestHeldMessageBacksOffUntilTheClaimEnds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	lim := b.def.Limits
	key := b.key("EURUSD")
	_, err := b.ledger.Claim(ctx, ledger.ClaimParams{Key: key, Owner: "crashed", LeaseUntil: t0.Add(lim.ItemLease), Fence: 1, Now: t0})
	require.NoError(t, err)
	at := t0.Add(time.Second)
	b.clock.Set(at)
	hidden := &visibilityLog{Sender: b.work, timeouts: map[string]time.Duration{}}
	b.consumer.Queue, b.consumer.RetryDelay = hidden, time.Second
	left := t0.Add(lim.ItemLease + lim.ClockSkew).Sub(at)
	for receives, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 9: 0} {
		batch := b.deliveries(b.message("EURUSD"))
		batch[0].ReceiveCount = receives
		res := b.consumer.Handle(ctx, time.Time{}, batch)
		require.Equal(t, consumer.StatusHeld, res.Items[0].Status)
		require.Len(t, res.Failed, 1)
		got := res.Failed[0].Delay
		require.Equal(t, got, hidden.timeouts[batch[0].ReceiptHandle], "receive %d", receives)
		if want == 0 { // backed off past the claim's end: hidden until then
			require.GreaterOrEqual(t, got, left, "receive %d", receives)
			require.LessOrEqual(t, got, left+left/10, "receive %d", receives)
			continue
		}
		require.Equal(t, want, got, "receive %d", receives)
	}
}

// visibilityLog records the visibility timeouts set through it.
type visibilityLog struct {
	queue.Sender
	timeouts map[string]time.Duration
}

func (v *visibilityLog) ChangeVisibility(_ context.Context, p queue.ChangeVisibilityParams) error {
	v.timeouts[p.ReceiptHandle] = p.Timeout
	return nil
}
