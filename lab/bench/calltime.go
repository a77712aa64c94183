package bench

import (
	"context"
	"slices"
	"sync"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// callTimes records when each AWS call of one invocation (a consumer
// batch, a coordinator trigger) started and ended, and which service it
// went to. Calls whose context carries none are not recorded.
type callTimes struct {
	mu    sync.Mutex
	calls []timedCall
}

type timedCall struct {
	start, end time.Time
	service    string // the SDK's service ID: "DynamoDB", "SQS"
}

type callTimesKey struct{}

func withCallTimes(ctx context.Context, ct *callTimes) context.Context {
	return context.WithValue(ctx, callTimesKey{}, ct)
}

// timeCalls is the API option that records each call, its retries and
// their back-off included, in the callTimes of its context.
func timeCalls(s *middleware.Stack) error {
	const id = "bench.CallTimes"
	if _, ok := s.Initialize.Get(id); ok {
		return nil
	}
	return s.Initialize.Add(middleware.InitializeMiddlewareFunc(id,
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			ct, _ := ctx.Value(callTimesKey{}).(*callTimes)
			if ct == nil {
				return next.HandleInitialize(ctx, in)
			}
			start := time.Now()
			out, md, err := next.HandleInitialize(ctx, in)
			c := timedCall{start: start, end: time.Now(), service: awsmiddleware.GetServiceID(ctx)}
			ct.mu.Lock()
			ct.calls = append(ct.calls, c)
			ct.mu.Unlock()
			return out, md, err
		}), middleware.After)
}

// invocation is what one invocation's calls say about its time.
type invocation struct {
	// Wall is its duration; Billed the same rounded up to the millisecond,
	// as Lambda bills it.
	Wall, Billed time.Duration
	// Own is the time none of its calls was outstanding: its own work
	// (and, on a loaded machine, its waits for a CPU).
	Own time.Duration
	// Chain counts, by service, the calls of the longest sequence of its
	// calls that ran one after another (each starting after the previous
	// ended). The calls of one goroutine form such a sequence, so no item
	// of a batch made more calls in sequence than the chain holds: at any
	// latency the waiting on the critical path is at most the chain's
	// calls × their latency.
	Chain map[string]int
	// Calls counts its calls by service.
	Calls map[string]int
}

// timing is the invocation that ran from start to end and made the calls
// recorded in ct.
func timing(start, end time.Time, ct *callTimes) invocation {
	ct.mu.Lock()
	calls := slices.Clone(ct.calls)
	ct.mu.Unlock()
	wall := end.Sub(start)
	inv := invocation{Wall: wall, Billed: wall.Truncate(time.Millisecond), Chain: map[string]int{}, Calls: map[string]int{}}
	if inv.Billed < wall {
		inv.Billed += time.Millisecond
	}
	for _, c := range calls {
		inv.Calls[c.service]++
	}
	// The union of the calls' intervals, clipped to [start, end].
	slices.SortFunc(calls, func(a, b timedCall) int { return a.start.Compare(b.start) })
	var waited time.Duration
	var from, to time.Time
	for i, c := range calls {
		s, e := maxTime(c.start, start), minTime(c.end, end)
		if !e.After(s) {
			continue
		}
		if i == 0 || s.After(to) {
			waited += to.Sub(from)
			from, to = s, e
		} else if e.After(to) {
			to = e
		}
	}
	waited += to.Sub(from)
	inv.Own = max(0, wall-waited)
	// The longest chain: earliest end first, each call taken when it
	// starts after the last one taken ended.
	slices.SortFunc(calls, func(a, b timedCall) int { return a.end.Compare(b.end) })
	var last time.Time
	for _, c := range calls {
		if !c.start.Before(last) {
			inv.Chain[c.service]++
			last = c.end
		}
	}
	return inv
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// invocations sums the timings of many invocations.
type invocations struct {
	N            int
	Wall, Billed time.Duration
	Own          time.Duration
	Chain, Calls map[string]int
}

func (s *invocations) add(inv invocation) {
	s.merge(invocations{N: 1, Wall: inv.Wall, Billed: inv.Billed, Own: inv.Own, Chain: inv.Chain, Calls: inv.Calls})
}

func (s *invocations) merge(o invocations) {
	if s.Chain == nil {
		s.Chain, s.Calls = map[string]int{}, map[string]int{}
	}
	s.N += o.N
	s.Wall += o.Wall
	s.Billed += o.Billed
	s.Own += o.Own
	for k, v := range o.Chain {
		s.Chain[k] += v
	}
	for k, v := range o.Calls {
		s.Calls[k] += v
	}
}
