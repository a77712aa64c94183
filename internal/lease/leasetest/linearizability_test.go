package leasetest

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lease"
)

// getThenPutStore is the lock a plain key-value store tempts one to build:
// read the record, decide, write the record back. Each step is atomic and
// the decision is the right one, but the read and the write are two steps,
// not one conditional write; yield runs between them.
type getThenPutStore struct {
	*memStore
	yieldFunc func()
}

func (s *getThenPutStore) Acquire(ctx context.Context, p lease.AcquireParams) (lease.Lease, error) {
	s.mu.Lock()
	snapshot := map[string]lease.Lease{p.Job: s.recs[p.Job]}
	s.mu.Unlock()

	s.yieldFunc()

	got, err := acquireStep(snapshot, p) // decided on what was read
	if err != nil {
		return got, err
	}
	s.mu.Lock()
	s.recs[p.Job] = got
	s.mu.Unlock()
	return got, nil
}

// rendezvous makes the first two callers of yield wait for each other, so
// that both have read before either writes; later callers only yield the
// processor. The timer only guards against a history with a single caller.
type rendezvous struct {
	arrived atomic.Int32
	both    chan struct{}
}

func newRendezvous() *rendezvous { return &rendezvous{both: make(chan struct{})} }

func (r *rendezvous) yield() {
	switch r.arrived.Add(1) {
	case 1:
		select {
		case <-r.both:
		case <-time.After(10 * time.Second):
		}
	case 2:
		close(r.both)
	default:
		runtime.Gosched()
	}
}

// The checker must reject the history of a get-then-put lock: two workers
// read the same free record, and both "acquire" it with the same fence.
func TestCheckerRejectsGetThenPutLock(t *testing.T) {
	t.Parallel()
	store := &getThenPutStore{memStore: newMemStore(), yieldFunc: newRendezvous().yield}
	h := recordHistory(t, t.Context(), store, "job", defaultWorkload())
	require.False(t, t.Failed())

	res, _ := checkHistory(h)
	require.Equal(t, porcupine.Illegal, res, "seed %d", h.seed)
}

// The same workload against the correct in-memory store is linearizable;
// together with the test above, the verdict depends on the store.
func TestCheckerAcceptsAtomicStore(t *testing.T) {
	t.Parallel()
	h := recordHistory(t, t.Context(), newMemStore(), "job", defaultWorkload())
	require.False(t, t.Failed())
	res, _ := checkHistory(h)
	require.Equal(t, porcupine.Ok, res, "seed %d", h.seed)
}

const ms = int64(time.Millisecond)

// call is one operation of a hand-written history.
type call struct {
	in  opInput
	out opOutput
	// from, to are the call's real-time interval; zero means sequential
	// (after every previous call).
	from, to int64
}

func acq(owner string, now, ttl, skew int64) opInput {
	return opInput{Kind: opAcquire, Owner: owner, Now: now, TTL: ttl, Skew: skew}
}

func ren(owner string, fence, now, ttl int64) opInput {
	return opInput{Kind: opRenew, Owner: owner, Fence: fence, Now: now, TTL: ttl}
}

func rel(owner string, fence int64) opInput {
	return opInput{Kind: opRelease, Owner: owner, Fence: fence}
}

func held(owner string, fence, acquired, expires int64) record {
	return record{Exists: true, Owner: owner, Fence: fence, AcquiredAt: acquired, ExpiresAt: expires}
}

func ok(r record) opOutput { return opOutput{Outcome: outOK, Rec: r} }

var (
	released  = opOutput{Outcome: outOK}
	notHolder = opOutput{Outcome: outNotHolder}
	inspect   = opInput{Kind: opInspect}
)

func heldBy(r record) opOutput { return opOutput{Outcome: outHeld, Rec: r} }

func ops(calls ...call) []porcupine.Operation {
	var out []porcupine.Operation
	for i, c := range calls {
		from, to := c.from, c.to
		if from == 0 && to == 0 {
			from, to = int64(1000+2*i), int64(1000+2*i+1)
		}
		out = append(out, porcupine.Operation{ClientId: i, Input: c.in, Call: from, Output: c.out, Return: to})
	}
	return out
}

// The model's verdict on hand-written histories, at the boundaries the
// contract names.
func TestModel(t *testing.T) {
	t.Parallel()
	a1 := held("a", 1, 1*ms, 11*ms) // a acquires at 1ms for 10ms
	cases := []struct {
		name  string
		legal bool
		ops   []porcupine.Operation
	}{
		{"takeover at expiry+skew", true, ops(
			call{in: acq("a", 1*ms, 10*ms, 0), out: ok(a1)},
			call{in: acq("b", 13*ms, 10*ms, 2*ms), out: ok(held("b", 2, 13*ms, 23*ms))},
		)},
		{"takeover a nanosecond early", false, ops(
			call{in: acq("a", 1*ms, 10*ms, 0), out: ok(a1)},
			call{in: acq("b", 13*ms-1, 10*ms, 2*ms), out: ok(held("b", 2, 13*ms-1, 23*ms-1))},
		)},
		{"held a nanosecond early", true, ops(
			call{in: acq("a", 1*ms, 10*ms, 0), out: ok(a1)},
			call{in: acq("b", 13*ms-1, 10*ms, 2*ms), out: heldBy(a1)},
		)},
		{"held at expiry+skew", false, ops(
			call{in: acq("a", 1*ms, 10*ms, 0), out: ok(a1)},
			call{in: acq("b", 13*ms, 10*ms, 2*ms), out: heldBy(a1)},
		)},
		{"held error with a wrong holder", false, ops(
			call{in: acq("a", 1*ms, 10*ms, 0), out: ok(a1)},
			call{in: acq("b", 2*ms, 10*ms, 0), out: heldBy(held("a", 1, 1*ms, 12*ms))},
		)},
		{"two holders, concurrent", false, ops(
			call{in: acq("a", 1*ms, 10*ms, 0), out: ok(a1), from: 1, to: 4},
			call{in: acq("b", 1*ms, 10*ms, 0), out: ok(held("b", 2, 1*ms, 11*ms)), from: 2, to: 3},
		)},
		{"one holder, concurrent", true, ops(
			call{in: acq("a", 1*ms, 10*ms, 0), out: ok(a1), from: 1, to: 4},
			call{in: acq("b", 1*ms, 10*ms, 0), out: heldBy(a1), from: 2, to: 3},
		)},
		{"held error before the acquisition it reports", false, ops(
			call{in: acq("b", 1*ms, 10*ms, 0), out: heldBy(a1), from: 1, to: 2},
			call{in: acq("a", 1*ms, 10*ms, 0), out: ok(a1), from: 3, to: 4},
		)},
		{"fence reused after release", false, ops(
			call{in: acq("a", 1*ms, 10*ms, 0), out: ok(a1)},
			call{in: rel("a", 1), out: released},
			call{in: acq("b", 2*ms, 10*ms, 0), out: ok(held("b", 1, 2*ms, 12*ms))},
		)},
		{"fence jumps after release", true, ops(
			call{in: acq("a", 1*ms, 10*ms, 0), out: ok(a1)},
			call{in: rel("a", 1), out: released},
			call{in: inspect, out: ok(record{Exists: true, Fence: 1})},
			call{in: acq("b", 2*ms, 10*ms, 0), out: ok(held("b", 7, 2*ms, 12*ms))},
		)},
		{"re-entrant acquisition keeps the fence", false, ops(
			call{in: acq("a", 1*ms, 10*ms, 0), out: ok(a1)},
			call{in: acq("a", 2*ms, 10*ms, 0), out: ok(held("a", 1, 2*ms, 12*ms))},
		)},
		{"renew before expiry", true, ops(
			call{in: acq("a", 1*ms, 10*ms, 0), out: ok(a1)},
			call{in: ren("a", 1, 11*ms-1, 5*ms), out: ok(held("a", 1, 1*ms, 16*ms-1))},
		)},
		{"renew at expiry", false, ops(
			call{in: acq("a", 1*ms, 10*ms, 0), out: ok(a1)},
			call{in: ren("a", 1, 11*ms, 5*ms), out: ok(held("a", 1, 1*ms, 16*ms))},
		)},
		{"renew returns a wrong expiry", false, ops(
			call{in: acq("a", 1*ms, 10*ms, 0), out: ok(a1)},
			call{in: ren("a", 1, 5*ms, 5*ms), out: ok(held("a", 1, 1*ms, 15*ms))},
		)},
		{"renew with a stale fence", false, ops(
			call{in: acq("a", 1*ms, 10*ms, 0), out: ok(a1)},
			call{in: acq("a", 2*ms, 10*ms, 0), out: ok(held("a", 2, 2*ms, 12*ms))},
			call{in: ren("a", 1, 3*ms, 5*ms), out: ok(held("a", 1, 1*ms, 8*ms))},
		)},
		{"release by another owner", false, ops(
			call{in: acq("a", 1*ms, 10*ms, 0), out: ok(a1)},
			call{in: rel("b", 1), out: released},
		)},
		{"release of an expired lease", true, ops(
			call{in: acq("a", 1*ms, 10*ms, 0), out: ok(a1)},
			call{in: ren("a", 1, 20*ms, 5*ms), out: notHolder},
			call{in: rel("a", 1), out: released},
			call{in: rel("a", 1), out: notHolder},
		)},
		{"inspect misses an acquisition", false, ops(
			call{in: acq("a", 1*ms, 10*ms, 0), out: ok(a1)},
			call{in: inspect, out: opOutput{Outcome: outNotFound}},
		)},
		{"inspect of a free lease shows an expiry", false, ops(
			call{in: acq("a", 1*ms, 10*ms, 0), out: ok(a1)},
			call{in: rel("a", 1), out: released},
			call{in: inspect, out: ok(record{Exists: true, Fence: 1, ExpiresAt: 11 * ms})},
		)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			want := porcupine.Illegal
			if c.legal {
				want = porcupine.Ok
			}
			require.Equal(t, want, porcupine.CheckOperationsTimeout(leaseModel, c.ops, 0))
		})
	}
}

// The history recorder keeps real-time order: a call that returned before
// another was made has the smaller timestamps.
func TestRecordHistoryOrder(t *testing.T) {
	t.Parallel()
	h := recordHistory(t, t.Context(), newMemStore(), "job", workload{
		Workers: 1, OpsPerWorker: 50, Seed: 1, MaxAdvance: time.Millisecond,
		TTLs: []time.Duration{time.Millisecond}, Skews: []time.Duration{0},
	})
	require.Len(t, h.ops, 50)
	for i := 1; i < len(h.ops); i++ {
		require.Less(t, h.ops[i-1].Return, h.ops[i].Call)
		require.Less(t, h.ops[i].Call, h.ops[i].Return)
	}
}
