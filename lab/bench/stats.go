package bench

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"
)

// Samples collects latencies. The zero value is ready; it may be used
// concurrently.
type Samples struct {
	mu sync.Mutex
	d  []time.Duration
}

// Add records one latency.
func (s *Samples) Add(d time.Duration) {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
}

// Len is the number of latencies recorded.
func (s *Samples) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.d)
}

// Merge adds every latency of o to s.
func (s *Samples) Merge(o *Samples) {
	o.mu.Lock()
	d := slices.Clone(o.d)
	o.mu.Unlock()
	s.mu.Lock()
	s.d = append(s.d, d...)
	s.mu.Unlock()
}

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) in
// seconds, NaN with no samples.
func (s *Samples) Percentile(p float64) float64 {
	s.mu.Lock()
	d := slices.Clone(s.d)
	s.mu.Unlock()
	if len(d) == 0 {
		return math.NaN()
	}
	slices.Sort(d)
	rank := int(math.Ceil(p / 100 * float64(len(d))))
	rank = min(max(rank, 1), len(d))
	return d[rank-1].Seconds()
}

// Load is the outcome of running workers for a while.
type Load struct {
	Ops     int           // operations completed
	Elapsed time.Duration // wall time from start to the last worker's end
}

// PerSecond is Ops per second of Elapsed.
func (l Load) PerSecond() float64 {
	if l.Elapsed <= 0 {
		return math.NaN()
	}
	return float64(l.Ops) / l.Elapsed.Seconds()
}

// Add sums two loads (their operations and times).
func (l Load) Add(o Load) Load { return Load{Ops: l.Ops + o.Ops, Elapsed: l.Elapsed + o.Elapsed} }

// RunWorkers runs n workers for the duration d: each calls op in a loop
// until d has passed, ctx is done or op fails. op gets the worker's index
// and returns the operations it completed (0 or more). The first error
// stops every worker and is returned.
func RunWorkers(ctx context.Context, n int, d time.Duration, op func(ctx context.Context, worker int) (int, error)) (Load, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		total int
		first error
		wg    sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(d)
	for w := range n {
		wg.Go(func() {
			done := 0
			for time.Now().Before(end) && ctx.Err() == nil {
				k, err := op(ctx, w)
				done += k
				if err != nil {
					mu.Lock()
					if first == nil && ctx.Err() == nil {
						first = err
					}
					mu.Unlock()
					cancel()
					break
				}
			}
			mu.Lock()
			total += done
			mu.Unlock()
		})
	}
	wg.Wait()
	return Load{Ops: total, Elapsed: time.Since(start)}, first
}

// median returns the median of v (the mean of the middle two for an even
// count), NaN when v is empty.
func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
