package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/fanin"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// callCase is one operation whose calls are counted.
type callCase struct {
	figure string
	ref    float64
	why    string // what the reference is
	// prepareFunc sets state up with env.Plain; measureFunc runs the operation on
	// env.Backend and checks its outcome.
	prepareFunc func(ctx context.Context, env *Env, k callKit) error
	measureFunc func(ctx context.Context, env *Env, k callKit) error
}

// callKit is what a call case works with: a fresh job and item each.
type callKit struct {
	job      string
	key      ledger.ItemKey
	consumer *consumer.Consumer // on env.Backend
	message  queue.Delivery     // the item's message
}

const oneWrite = "1 conditional write"

func callCases() []callCase {
	acquire := func(job, owner string, now time.Time) lease.AcquireParams {
		return lease.AcquireParams{Job: job, Owner: owner, TTL: time.Minute, Now: now, Skew: time.Second}
	}
	handle := func(ctx context.Context, k callKit, want string) error {
		res := k.consumer.Handle(ctx, time.Now().Add(time.Minute), []queue.Delivery{k.message})
		if got := res.Items[0].Status; got != want {
			return fmt.Errorf("consumer: status %s, want %s (failures %v)", got, want, res.Failed)
		}
		return nil
	}
	holdLease := func(ctx context.Context, env *Env, k callKit) error {
		_, err := env.Plain.Leases.Acquire(ctx, acquire(k.job, "a", time.Now()))
		return err
	}
	claimOther := func(ctx context.Context, env *Env, k callKit) error {
		now := time.Now()
		_, err := env.Plain.Ledger.Claim(ctx, ledger.ClaimParams{Key: k.key, Owner: "other", LeaseUntil: now.Add(time.Minute), Fence: 1, Now: now})
		return err
	}
	return []callCase{
		{
			figure: "lease acquire, free", ref: 1, why: oneWrite,
			measureFunc: func(ctx context.Context, env *Env, k callKit) error {
				_, err := env.Backend.Leases.Acquire(ctx, acquire(k.job, "a", time.Now()))
				return err
			},
		},
		{
			figure: "lease acquire, contended (lease port)", ref: 1, why: oneWrite + " (refused)",
			prepareFunc: holdLease,
			measureFunc: func(ctx context.Context, env *Env, k callKit) error {
				_, err := env.Backend.Leases.Acquire(ctx, acquire(k.job, "b", time.Now()))
				if !errors.Is(err, lease.ErrHeld) {
					return fmt.Errorf("contended acquire: %v, want ErrHeld", err)
				}
				return nil
			},
		},
		{
			// What the coordinator runs: the lease store wrapped in
			// lease.Counting, which records each refusal for
			// 'baton status' and 'baton lease show'.
			figure: "lease acquire, contended, as shipped (lease port + contention record)", ref: 2,
			why:         oneWrite + " (refused) + 1 write of the contention record",
			prepareFunc: holdLease,
			measureFunc: func(ctx context.Context, env *Env, k callKit) error {
				leases := lease.Counting(env.Backend.Leases, nil)
				_, err := leases.Acquire(ctx, acquire(k.job, "b", time.Now()))
				if !errors.Is(err, lease.ErrHeld) {
					return fmt.Errorf("contended acquire: %v, want ErrHeld", err)
				}
				counter, ok := env.Plain.Leases.(lease.ContentionCounter)
				if !ok {
					return errors.New("the lease store counts no contention")
				}
				rec, err := counter.Contention(ctx, k.job)
				if err == nil && (rec.Count != 1 || rec.Holder.Owner != "a") {
					err = fmt.Errorf("contention record %+v, want 1 refusal by holder a", rec)
				}
				return err
			},
		},
		{
			figure: "lease acquire, expired", ref: 1, why: oneWrite,
			prepareFunc: func(ctx context.Context, env *Env, k callKit) error {
				_, err := env.Plain.Leases.Acquire(ctx, acquire(k.job, "a", time.Now().Add(-time.Hour)))
				return err
			},
			measureFunc: func(ctx context.Context, env *Env, k callKit) error {
				l, err := env.Backend.Leases.Acquire(ctx, acquire(k.job, "b", time.Now()))
				if err == nil && l.Fence != 2 {
					err = fmt.Errorf("takeover minted fence %d, want 2", l.Fence)
				}
				return err
			},
		},
		{
			figure: "lease release", ref: 1, why: oneWrite,
			prepareFunc: func(ctx context.Context, env *Env, k callKit) error {
				_, err := env.Plain.Leases.Acquire(ctx, acquire(k.job, "a", time.Now()))
				return err
			},
			measureFunc: func(ctx context.Context, env *Env, k callKit) error {
				return env.Backend.Leases.Release(ctx, lease.ReleaseParams{Job: k.job, Owner: "a", Fence: 1})
			},
		},
		{
			figure: "item new (consumer: vouch, claim, process, complete, settle)", ref: 4,
			why: "1 run read (the vouch; a per-process cache answers for a tick's other messages for a second) + 2 conditional writes + 1 read of the item's shard: its probe (the settle; 8 of its names, or the whole shard, at most about 64 records whatever the run's size, once they have ended)",
			measureFunc: func(ctx context.Context, env *Env, k callKit) error {
				return handle(ctx, k, consumer.StatusSucceeded)
			},
		},
		{
			figure: "item duplicate (consumer: delivery of a SUCCEEDED item)", ref: 2, why: "1 run read (the vouch) + 1 call",
			prepareFunc: func(ctx context.Context, env *Env, k callKit) error {
				plain := *k.consumer
				plain.Ledger = env.Plain.Ledger
				k.consumer = &plain
				return handle(ctx, k, consumer.StatusSucceeded)
			},
			measureFunc: func(ctx context.Context, env *Env, k callKit) error {
				return handle(ctx, k, consumer.StatusDuplicate)
			},
		},
		{
			figure: "item contended (consumer: item RUNNING under a live owner)", ref: 2, why: "1 run read (the vouch) + 1 call",
			prepareFunc: claimOther,
			measureFunc: func(ctx context.Context, env *Env, k callKit) error {
				return handle(ctx, k, consumer.StatusHeld)
			},
		},
	}
}

// calls counts the backend calls of each operation of callCases, and the
// calls per item of a fan-out.
func (r *Runner) calls(ctx context.Context, t Target) error {
	env, err := r.open(ctx, t, "calls")
	if err != nil {
		return err
	}
	defer env.Close()
	for i, c := range callCases() {
		name := fmt.Sprintf("calls%d", i)
		proc := &sleeper{}
		// More items than a shard (65 > fanin.ShardItems): the figures are
		// the per-item path of a large run, whose settle reads the item's
		// shard (and finds other items in flight).
		j := syntheticJob(name, 65, 1, proc)
		k := callKit{
			job: name,
			key: ledger.ItemKey{Run: ledger.RunID{Job: name, Nominal: time.Now().UTC().Truncate(time.Minute), Generation: 1}, Asset: j.Assets[0]},
			consumer: &consumer.Consumer{
				Ledger: env.Backend.Ledger, Queue: env.Backend.Work, Jobs: baton.MustCatalog(j), Owner: "bench",
			},
		}
		k.message = queue.Delivery{MessageID: "m-" + name, Body: message.New(k.key, 1, false).Encode(), ReceiveCount: 1}
		if err := openRun(ctx, env.Plain.Ledger, k.key.Run, len(j.Assets)); err != nil { // the run the consumer vouches with
			return fmt.Errorf("%s: open run: %w", name, err)
		}
		if c.prepareFunc != nil {
			if err := c.prepareFunc(ctx, env, k); err != nil {
				return fmt.Errorf("%s: prepare: %w", c.figure, err)
			}
		}
		env.Calls.Reset()
		if err := c.measureFunc(ctx, env, k); err != nil {
			return fmt.Errorf("%s: %w", c.figure, err)
		}
		got := env.Calls.Snapshot()
		r.add(Row{
			Scenario: "1 calls", Backend: t.Name, Figure: c.figure,
			Value: float64(Total(got)), Note: breakdown(got),
			Reference: c.ref, RefText: c.why, Unit: Count,
		})
	}
	return nil
}

// breakdown lists calls by operation, e.g. "UpdateItem 1, GetItem 1".
func breakdown(m map[string]int) string {
	ops := sortedOps(m)
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = fmt.Sprintf("%s %d", op, m[op])
	}
	return strings.Join(parts, ", ")
}

// sortedOps returns the operations of m, most calls first.
func sortedOps(m map[string]int) []string {
	ops := make([]string, 0, len(m))
	for op := range m {
		ops = append(ops, op)
	}
	slices.SortFunc(ops, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	return ops
}

// openRun opens and fans out run id of n assets with fence 1, as a
// coordinator would have before its messages reach a consumer.
func openRun(ctx context.Context, l ledger.Store, id ledger.RunID, n int) error {
	run, _, err := l.OpenRun(ctx, ledger.OpenRunParams{Job: id.Job, Nominal: id.Nominal, Fence: 1, Shards: fanin.Shards(n), Now: time.Now()})
	if err != nil {
		return err
	}
	_, err = l.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: n, Done: true, Now: time.Now()})
	return err
}
