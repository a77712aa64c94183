package leasetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lease"
)

// TestLinearizable: workers hammer one job with acquire, renew, release and
// inspect calls under a shared logical clock; the recorded history must be
// linearizable against the sequential lease model (so no two live holders,
// and fences strictly increasing), and must have exercised contention.
func TestLinearizable(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	hist := recordHistory(t, f.ctx, f.store, f.job, defaultWorkload())
	if t.Failed() {
		return // an unexpected error leaves the history incomplete
	}
	c := hist.counts()
	t.Logf("history: %d operations, %+v", len(hist.ops), c)
	require.Greater(t, c.acquired, 1, "the workload must acquire more than once")
	require.Positive(t, c.held, "the workload must meet a held lease")
	requireLinearizable(t, hist)
}

// workload shapes a concurrent history. Times are whole milliseconds so
// that calls land exactly on expiry boundaries.
type workload struct {
	Workers      int
	OpsPerWorker int
	Seed         uint64
	// MaxAdvance is the most each call advances the shared clock by (each
	// call advances it by 0..MaxAdvance).
	MaxAdvance time.Duration
	TTLs       []time.Duration
	Skews      []time.Duration
}

func defaultWorkload() workload {
	return workload{
		Workers:      8,
		OpsPerWorker: 40,
		Seed:         rand.Uint64(),
		MaxAdvance:   time.Millisecond,
		TTLs:         []time.Duration{2 * time.Millisecond, 4 * time.Millisecond, 8 * time.Millisecond},
		Skews:        []time.Duration{0, time.Millisecond, 2 * time.Millisecond},
	}
}

// history is a recorded concurrent history.
type history struct {
	ops  []porcupine.Operation
	seed uint64
}

type historyCounts struct {
	acquired, held, renewed, released, notHolder, inspected int
}

func (h history) counts() historyCounts {
	var c historyCounts
	for _, op := range h.ops {
		in, out := op.Input.(opInput), op.Output.(opOutput)
		switch {
		case out.Outcome == outHeld:
			c.held++
		case out.Outcome == outNotHolder:
			c.notHolder++
		case in.Kind == opAcquire:
			c.acquired++
		case in.Kind == opRenew:
			c.renewed++
		case in.Kind == opRelease:
			c.released++
		case in.Kind == opInspect:
			c.inspected++
		}
	}
	return c
}

// recordHistory runs the workload against store on job and records every
// call. An error outside the contract fails t (its effect is unknown, so the
// history is then unusable).
func recordHistory(t *testing.T, ctx context.Context, store lease.Store, job string, w workload) history {
	t.Helper()
	var (
		clock atomic.Int64 // logical time, nanoseconds since epoch
		seq   atomic.Int64 // real-time order of call and return events
		mu    sync.Mutex
		ops   []porcupine.Operation
		wg    sync.WaitGroup
	)
	clock.Store(int64(time.Millisecond)) // after epoch: 0 stays the zero time
	for id := range w.Workers {
		wg.Go(func() {
			wk := &worker{
				id:    id,
				owner: fmt.Sprintf("w%d", id),
				rng:   rand.New(rand.NewPCG(w.Seed, uint64(id))),
			}
			for range w.OpsPerWorker {
				advance := wk.rng.Int64N(int64(w.MaxAdvance/time.Millisecond)+1) * int64(time.Millisecond)
				in := wk.next(clock.Add(advance), w)
				call := seq.Add(1)
				out, err := apply(ctx, store, job, in)
				ret := seq.Add(1)
				if err != nil {
					t.Errorf("worker %d: %s: %v", id, in.Kind, err)
					return
				}
				wk.observe(in, out)
				mu.Lock()
				ops = append(ops, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return history{ops: ops, seed: w.Seed}
}

// worker is one client of the history: it remembers the fence it believes
// it holds, and the last one it held, to make stale calls with.
type worker struct {
	id    int
	owner string
	rng   *rand.Rand
	held  int64 // fence believed held, 0 if none
	last  int64 // last fence held
}

// next picks the worker's next call at now.
func (wk *worker) next(now int64, w workload) opInput {
	ttl := int64(w.TTLs[wk.rng.IntN(len(w.TTLs))])
	r := wk.rng.IntN(100)
	acquire := opInput{Kind: opAcquire, Owner: wk.owner, Now: now, TTL: ttl, Skew: int64(w.Skews[wk.rng.IntN(len(w.Skews))])}
	if wk.held != 0 {
		switch {
		case r < 40:
			return opInput{Kind: opRenew, Owner: wk.owner, Fence: wk.held, Now: now, TTL: ttl}
		case r < 65:
			return opInput{Kind: opRelease, Owner: wk.owner, Fence: wk.held}
		case r < 80:
			return acquire // re-entrant
		case r < 90:
			return opInput{Kind: opInspect}
		}
		// A stale fence.
		return opInput{Kind: opRenew, Owner: wk.owner, Fence: wk.held - 1, Now: now, TTL: ttl}
	}
	switch {
	case r < 70:
		return acquire
	case r < 85:
		return opInput{Kind: opInspect}
	case r < 93:
		return opInput{Kind: opRenew, Owner: wk.owner, Fence: wk.last, Now: now, TTL: ttl}
	}
	return opInput{Kind: opRelease, Owner: wk.owner, Fence: wk.last}
}

// observe updates what the worker believes after a call.
func (wk *worker) observe(in opInput, out opOutput) {
	switch {
	case in.Kind == opAcquire && out.Outcome == outOK:
		wk.held, wk.last = out.Rec.Fence, out.Rec.Fence
	case in.Kind == opRenew && out.Outcome == outNotHolder && in.Fence == wk.held,
		in.Kind == opRelease && in.Fence == wk.held:
		wk.held = 0
	}
}

// apply makes the call and translates its result into model form. Errors
// outside the contract are returned.
func apply(ctx context.Context, store lease.Store, job string, in opInput) (opOutput, error) {
	var (
		got lease.Lease
		err error
	)
	switch in.Kind {
	case opAcquire:
		got, err = store.Acquire(ctx, lease.AcquireParams{Job: job, Owner: in.Owner, TTL: time.Duration(in.TTL), Now: epoch.Add(time.Duration(in.Now)), Skew: time.Duration(in.Skew)})
	case opRenew:
		got, err = store.Renew(ctx, lease.RenewParams{Job: job, Owner: in.Owner, Fence: in.Fence, TTL: time.Duration(in.TTL), Now: epoch.Add(time.Duration(in.Now))})
	case opRelease:
		err = store.Release(ctx, lease.ReleaseParams{Job: job, Owner: in.Owner, Fence: in.Fence})
	case opInspect:
		got, err = store.Inspect(ctx, job)
	}
	var held *lease.HeldError
	switch {
	case err == nil && in.Kind == opRelease:
		return opOutput{Outcome: outOK}, nil
	case err == nil:
		if got.Job != job {
			return opOutput{}, fmt.Errorf("record of job %q returned for %q", got.Job, job)
		}
		return opOutput{Outcome: outOK, Rec: toRecord(got)}, nil
	case in.Kind == opAcquire && errors.As(err, &held):
		if !errors.Is(err, lease.ErrHeld) {
			return opOutput{}, fmt.Errorf("*HeldError does not match ErrHeld: %w", err)
		}
		if held.Holder.Job != job {
			return opOutput{}, fmt.Errorf("holder of job %q reported for %q", held.Holder.Job, job)
		}
		return opOutput{Outcome: outHeld, Rec: toRecord(held.Holder)}, nil
	case (in.Kind == opRenew || in.Kind == opRelease) && errors.Is(err, lease.ErrNotHolder):
		return opOutput{Outcome: outNotHolder}, nil
	case in.Kind == opInspect && errors.Is(err, lease.ErrNotFound):
		return opOutput{Outcome: outNotFound}, nil
	}
	return opOutput{}, err
}

// checkTimeout bounds the linearizability check. The workload is small
// enough that the check takes well under a second.
const checkTimeout = 20 * time.Second

// checkHistory checks h against the lease model.
func checkHistory(h history) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	return porcupine.CheckOperationsVerbose(leaseModel, h.ops, checkTimeout)
}

// requireLinearizable fails t unless h is linearizable. On failure it
// writes porcupine's visualization of the history to a file and names it.
func requireLinearizable(t *testing.T, h history) {
	t.Helper()
	res, info := checkHistory(h)
	if res == porcupine.Ok {
		return
	}
	where := "not written"
	if f, err := os.CreateTemp("", "lease-history-*.html"); err == nil {
		if err := porcupine.Visualize(leaseModel, info, f); err == nil {
			where = f.Name()
		}
		f.Close()
	}
	t.Fatalf("lease history (%d operations, seed %d) is %s against the lease model; visualization: %s",
		len(h.ops), h.seed, res, where)
}
