package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/internal/lease"
)

// lease measures acquire and release with each number of contenders on
// one job, against as many writers making raw conditional writes; then
// the contenders retrying with backoff (leaseBackoff).
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
		var leaseLoad, rawLoad Load
		var won atomic.Int64
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
	}
	return r.leaseBackoff(ctx, t, env)
}

// leaseBackoff measures one lease wanted by many callers, each doing what
// a caller that wants a lease does: a lease.Contender (kept across its
// acquisitions and the rounds, as a warm process keeps it) that acquires,
// releases at once and asks again. The rounds alternate the contender
// counts (in the reverse order every other round), after one writer's raw
// conditional writes (the reference), so that a change of the machine's
// load falls on all of them alike; each rate is the median of its rounds.
func (r *Runner) leaseBackoff(ctx context.Context, t Target, env *Env) error {
	type tally struct {
		rates     []float64
		calls     int64
		won       int64
		elapsed   time.Duration
		refused   Samples // refused Acquire calls
		handovers Samples // a release's return to the next acquisition's
	}
	counts := r.Config.Contenders
	tallies := make([]tally, len(counts))
	contenders := make([][]lease.Contender, len(counts))
	for i, n := range counts {
		contenders[i] = make([]lease.Contender, n)
	}
	var raw Samples
	var rawRates []float64
	var rawSeq atomic.Int64
	rounds := max(r.Config.BackoffRounds, 1)
	window := r.Config.BackoffWindow
	if window <= 0 {
		window = r.Config.Window
	}
	// Each count's window starts with a lead-in whose acquisitions count
	// in the calls per acquisition but not in the rate: while the other
	// counts ran, this count's contenders' waits went on, and the ones
	// that ended meanwhile all call at the start of the window, a burst
	// that continuous contention spreads out.
	lead := window / 4
	order := make([]int, len(counts))
	for i := range order {
		order[i] = i
	}
	for round := range rounds {
		l, err := RunWorkers(ctx, 1, window, func(ctx context.Context, w int) (int, error) {
			start := time.Now()
			if err := env.RawWriteFunc(ctx, fmt.Sprintf("b-%d", rawSeq.Add(1))); err != nil {
				return 0, err
			}
			raw.Add(time.Since(start))
			return 1, nil
		})
		if err != nil {
			return fmt.Errorf("raw writes, 1 writer: %w", err)
		}
		rawRates = append(rawRates, l.PerSecond()/2)
		line := fmt.Sprintf("  backoff round %d: raw %.0f writes/s", round+1, l.PerSecond())
		// Every other round takes the counts in the reverse order, so
		// that none always follows the raw writer or another count.
		slices.Reverse(order)
		for _, i := range order {
			n := counts[i]
			tl := &tallies[i]
			job := fmt.Sprintf("backoff-%d", n)
			leases := timedAcquire{Store: env.Backend.Leases, refused: &tl.refused}
			var won, calls, released atomic.Int64
			var settled atomic.Int64 // acquisitions after the lead-in
			begin := time.Now()
			wctx, cancel := context.WithTimeout(ctx, lead+window)
			l, err := RunWorkers(wctx, n, lead+window, func(ctx context.Context, w int) (int, error) {
				owner := fmt.Sprintf("contender-%d", w)
				got, c, err := contenders[i][w].Acquire(ctx, leases, lease.AcquireParams{Job: job, Owner: owner, TTL: time.Minute, Skew: time.Second})
				calls.Add(int64(c))
				if err != nil {
					return c, err
				}
				if at := released.Load(); at != 0 {
					tl.handovers.Add(max(time.Since(time.Unix(0, at)), 0))
				}
				won.Add(1)
				if time.Since(begin) >= lead {
					settled.Add(1)
				}
				err = env.Backend.Leases.Release(ctx, lease.ReleaseParams{Job: job, Owner: owner, Fence: got.Fence})
				released.Store(time.Now().UnixNano())
				return c + 1, err
			})
			cancel()
			if err != nil {
				return fmt.Errorf("lease with backoff, %d contenders: %w", n, err)
			}
			rate := float64(settled.Load()) / (l.Elapsed - lead).Seconds()
			tl.rates = append(tl.rates, rate)
			tl.calls += calls.Load()
			tl.won += won.Load()
			tl.elapsed += l.Elapsed
			line += fmt.Sprintf("; %d: %.0f acquisitions/s, %.0f refused calls/s", n, rate, float64(calls.Load()-won.Load())/l.Elapsed.Seconds())
		}
		r.logf("%s", line)
	}

	rawRate := median(rawRates)
	for i, n := range counts {
		tl := &tallies[i]
		who := fmt.Sprintf("%d contender", n)
		if n > 1 {
			who += "s"
		}
		row := func(figure string, v, ref float64, refText string, u Unit) Row {
			return Row{Scenario: "2 lease", Backend: t.Name, Figure: figure + ", " + who, Value: v, Reference: ref, RefText: refText, Unit: u}
		}
		refusedPerSec := float64(tl.calls-tl.won) / tl.elapsed.Seconds()
		cw := row("acquire calls per acquisition, retrying with jittered backoff", float64(tl.calls)/float64(max(tl.won, 1)), 1, "an uncontended acquire", Count)
		cw.Goal = AtMost(5, Count)
		cw.Note = fmt.Sprintf("%.0f acquisitions/s, %.0f refused calls/s", float64(tl.won)/tl.elapsed.Seconds(), refusedPerSec)
		r.add(cw)
		ar := row("acquisitions/s retrying with jittered backoff (acquire, release at once, ask again)", median(tl.rates), rawRate,
			fmt.Sprintf("raw conditional writes of 1 writer ÷ 2 (an acquisition and its release, one after the other); medians of %d alternated rounds", rounds), Rate)
		ar.Note = fmt.Sprintf("median of %d rounds; handover p50 %s, p99 %s (a release's return to the next acquisition's)",
			rounds, format(tl.handovers.Percentile(50), Duration), format(tl.handovers.Percentile(99), Duration))
		r.add(ar)
		if tl.refused.Len() > 0 {
			r.add(
				row("refused acquire call p50, retrying with jittered backoff", tl.refused.Percentile(50), raw.Percentile(50), "raw conditional write, 1 writer p50, same rounds", Duration),
				row("refused acquire call p99, retrying with jittered backoff", tl.refused.Percentile(99), raw.Percentile(99), "raw conditional write, 1 writer p99, same rounds", Duration),
			)
		}
	}
	if len(counts) < 2 {
		return nil
	}
	// The goal is judged on the median of the rounds' ratios: each round
	// runs both counts within a second, under the same load, while the
	// load of a shared machine moves either count's own median by more
	// than the difference sought.
	most, fewer := len(counts)-1, len(counts)-2
	var ratios []float64
	for k := range tallies[most].rates {
		ratios = append(ratios, tallies[most].rates[k]/tallies[fewer].rates[k])
	}
	slices.Sort(ratios)
	quartile := func(q int) float64 { return ratios[min(len(ratios)*q/4, len(ratios)-1)] }
	mostRate, fewerRate := median(tallies[most].rates), median(tallies[fewer].rates)
	g := Row{
		Scenario: "2 lease", Backend: t.Name,
		Figure: fmt.Sprintf("acquisitions/s with %d contenders ÷ with %d in the same round, retrying with jittered backoff (median of %d rounds)",
			counts[most], counts[fewer], rounds),
		Value: median(ratios), Reference: 1, RefText: "as many acquisitions/s as with fewer contenders",
		Unit: Count, Goal: RatioAtLeast(1),
		Note: fmt.Sprintf("middle half %s–%s; medians %s with %d, %s with %d: %s",
			percent(quartile(1)), percent(quartile(3)), format(mostRate, Rate), counts[most], format(fewerRate, Rate), counts[fewer], percent(mostRate/fewerRate)),
	}
	r.add(g)
	return nil
}

// timedAcquire times the refused Acquire calls of a lease.Store.
type timedAcquire struct {
	lease.Store
	refused *Samples
}

func (s timedAcquire) Acquire(ctx context.Context, p lease.AcquireParams) (lease.Lease, error) {
	start := time.Now()
	l, err := s.Store.Acquire(ctx, p)
	if errors.Is(err, lease.ErrHeld) {
		s.refused.Add(time.Since(start))
	}
	return l, err
}
