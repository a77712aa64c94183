package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/internal/lease"
)

// lease measures acquire and release with each number of contenders on
// one job, against as many writers making raw conditional writes.
func (r *Runner) lease(ctx context.Context, t Target) error {
	env, err := r.open(ctx, t, "lease")
	if err != nil {
		return err
	}
	defer env.Close()
	var rawSeq atomic.Int64
	for _, n := range r.Config.Contenders {
		job := fmt.Sprintf("contended-%d", n)
		var acq, rel, raw Samples
		var leaseLoad, rawLoad, backoffLoad Load
		var won, backoffCalls, backoffWon atomic.Int64
		// Each contender keeps its backoff across its acquisitions, and
		// across rounds, as a warm process would.
		contenders := make([]lease.Contender, n)
		for round := range r.Config.Rounds {
			l, err := RunWorkers(ctx, n, r.Config.Window, func(ctx context.Context, w int) (int, error) {
				start := time.Now()
				if err := env.RawWriteFunc(ctx, fmt.Sprintf("w%d-%d", n, rawSeq.Add(1))); err != nil {
					return 0, err
				}
				raw.Add(time.Since(start))
				return 1, nil
			})
			if err != nil {
				return fmt.Errorf("raw writes, %d writers: %w", n, err)
			}
			rawLoad = rawLoad.Add(l)
			rawRound := l

			l, err = RunWorkers(ctx, n, r.Config.Window, func(ctx context.Context, w int) (int, error) {
				owner := fmt.Sprintf("contender-%d", w)
				start := time.Now()
				got, err := env.Backend.Leases.Acquire(ctx, lease.AcquireParams{Job: job, Owner: owner, TTL: time.Minute, Now: start, Skew: time.Second})
				acq.Add(time.Since(start))
				if errors.Is(err, lease.ErrHeld) {
					return 1, nil
				}
				if err != nil {
					return 1, fmt.Errorf("acquire: %w", err)
				}
				won.Add(1)
				start = time.Now()
				err = env.Backend.Leases.Release(ctx, lease.ReleaseParams{Job: job, Owner: owner, Fence: got.Fence})
				rel.Add(time.Since(start))
				if err != nil {
					return 2, fmt.Errorf("release: %w", err)
				}
				return 2, nil
			})
			if err != nil {
				return fmt.Errorf("lease, %d contenders: %w", n, err)
			}
			leaseLoad = leaseLoad.Add(l)
			r.logf("  %d contenders, round %d: %.0f lease calls/s, %.0f raw writes/s", n, round+1, l.PerSecond(), rawRound.PerSecond())

			// The same contenders as a caller that wants the lease does
			// it: retrying with jittered exponential backoff.
			wctx, cancel := context.WithTimeout(ctx, r.Config.Window)
			l, err = RunWorkers(wctx, n, r.Config.Window, func(ctx context.Context, w int) (int, error) {
				owner := fmt.Sprintf("backoff-%d", w)
				got, calls, err := contenders[w].Acquire(ctx, env.Backend.Leases,
					lease.AcquireParams{Job: job + "-backoff", Owner: owner, TTL: time.Minute, Skew: time.Second})
				backoffCalls.Add(int64(calls))
				if err != nil {
					return calls, err
				}
				backoffWon.Add(1)
				err = env.Backend.Leases.Release(ctx, lease.ReleaseParams{Job: job + "-backoff", Owner: owner, Fence: got.Fence})
				return calls + 1, err
			})
			cancel()
			if err != nil {
				return fmt.Errorf("lease with backoff, %d contenders: %w", n, err)
			}
			backoffLoad = backoffLoad.Add(l)
		}
		who := fmt.Sprintf("%d contender", n)
		writers := fmt.Sprintf("raw conditional write, %d writer", n)
		if n > 1 {
			who += "s"
			writers += "s"
		}
		row := func(figure string, v, ref float64, refText string, u Unit) Row {
			return Row{Scenario: "2 lease", Backend: t.Name, Figure: figure + ", " + who, Value: v, Reference: ref, RefText: refText, Unit: u}
		}
		r.add(
			row("acquire p50", acq.Percentile(50), raw.Percentile(50), writers+" p50", Duration),
			row("acquire p99", acq.Percentile(99), raw.Percentile(99), writers+" p99", Duration),
			row("release p50", rel.Percentile(50), raw.Percentile(50), writers+" p50", Duration),
			row("release p99", rel.Percentile(99), raw.Percentile(99), writers+" p99", Duration),
		)
		tp := row("throughput, acquire + release calls", leaseLoad.PerSecond(), rawLoad.PerSecond(), writers+", writes", Rate)
		tp.Note = fmt.Sprintf("%.0f acquisitions/s", float64(won.Load())/leaseLoad.Elapsed.Seconds())
		r.add(tp)
		perWin := float64(backoffCalls.Load()) / float64(max(backoffWon.Load(), 1))
		cw := row("acquire calls per acquisition, retrying with jittered backoff", perWin, 1, "an uncontended acquire", Count)
		cw.Goal = AtMost(5, Count)
		cw.Note = fmt.Sprintf("%.0f acquisitions/s", float64(backoffWon.Load())/backoffLoad.Elapsed.Seconds())
		r.add(cw)
	}
	return nil
}
