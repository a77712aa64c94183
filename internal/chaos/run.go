package chaos

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/queue"
)

// supersededGrace is how long after a newer generation opened a consumer
// may still act on an older one's message: its run cache answers for a
// tick for a second (package consumer), plus a margin. Deliveries of an
// older generation handled later than that must be acknowledged as
// superseded.
const supersededGrace = time.Second + 250*time.Millisecond

// Run runs the chaos suite on h with cfg and returns its report: it
// triggers cfg.Ticks ticks while injecting the failures cfg asks for, lets
// the system settle, and checks the result (see the package
// documentation). It fails t when the run cannot be made (a backend that
// does not open) or a consumer process exits by itself; missed goals are
// the report's.
func Run(t testing.TB, h Harness, cfg Config) *Report {
	t.Helper()
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	r := &runner{cfg: cfg, h: h, dice: newDice(cfg.Seed), start: time.Now(), finished: map[string]bool{}}
	r.spec = h.Setup(t)
	dir := t.TempDir()
	r.journals = filepath.Join(dir, "journal")
	if err := os.Mkdir(r.journals, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	b, err := h.Open(ctx, r.spec)
	if err != nil {
		t.Fatalf("open %s: %v", h.Name, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	r.b = b
	if r.coords, err = newCoordinators(b, cfg.Triggers, r.dice, cfg.CoordinatorKills, r.skew, cfg.Bulk); err != nil {
		t.Fatal(err)
	}

	consumers, stopConsumers := context.WithCancel(context.WithoutCancel(ctx))
	var cwg sync.WaitGroup
	stop := sync.OnceFunc(func() {
		stopConsumers()
		cwg.Wait()
		if r.procs != nil {
			r.procs.stop()
		}
	})
	t.Cleanup(stop)
	for i := range cfg.Consumers {
		bi, err := h.Open(ctx, r.spec)
		if err != nil {
			t.Fatalf("open %s: %v", h.Name, err)
		}
		owner := "consumer-" + strconv.Itoa(i)
		j, err := OpenJournal(r.journals, owner)
		if err != nil {
			t.Fatal(err)
		}
		o := consumerOptions{
			Owner: owner, Journal: j, Latency: cfg.Latency, Bulk: cfg.Bulk, Skew: r.skew(), Seed: cfg.Seed + uint64(i+1)*104729,
			Duplicates: cfg.Duplicates, Kills: cfg.ConsumerKills, Calm: r.calm.Load, Cover: true,
			WrapLedger: cfg.WrapLedger, WrapHandle: cfg.WrapHandle, NoDeadLetter: cfg.NoDeadLetter,
		}
		cwg.Go(func() {
			if err := runConsumer(consumers, bi, o); err != nil {
				t.Errorf("%s: %v", owner, err)
			}
			_ = bi.Close()
			_ = j.Close()
		})
	}
	calmFile := filepath.Join(dir, "calm")
	killing, stopKilling := context.WithCancel(ctx)
	defer stopKilling()
	if h.Processes && cfg.Processes > 0 {
		r.procs = &processes{
			base: workerConfig{
				Harness: h.Name, Spec: r.spec, JournalDir: r.journals, Seed: cfg.Seed, Latency: cfg.Latency, Bulk: cfg.Bulk,
				Duplicates: cfg.Duplicates, Kills: cfg.ConsumerKills, CalmFile: calmFile,
			},
			logDir: dir, dice: newDice(cfg.Seed + 1), skew: r.skew,
		}
		for i := range cfg.Processes {
			if err := r.procs.start(i); err != nil {
				t.Fatal(err)
			}
		}
		go r.procs.killLoop(killing, cfg.KillEvery)
	}

	r.trigger(ctx)

	// Settle: no more injection; a fault-free coordinator passes until
	// every run has finished and the queue is empty.
	r.calm.Store(true)
	if err := os.WriteFile(calmFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	stopKilling()
	r.settle(ctx)
	stop()
	if r.procs != nil {
		for _, c := range r.procs.crashReports() {
			t.Errorf("consumer process: %s", c)
		}
	}
	r.took = time.Since(r.start)
	rep, err := r.report(ctx)
	if err != nil {
		t.Fatalf("chaos report: %v", err)
	}
	return rep
}

// runner is one Run on its way.
type runner struct {
	cfg      Config
	h        Harness
	spec     Spec
	dice     *dice
	b        backend.Backend // the coordinators' and the checks'
	coords   *coordinators
	procs    *processes
	journals string
	calm     atomic.Bool
	start    time.Time
	took     time.Duration

	ticks      []time.Time // nominal times
	lastAt     time.Time   // the last tick's trigger time
	poisonSent int
	staleSent  atomic.Int64
	finished   map[string]bool // run ids of the ticks' finished current runs (set by the report)
}

// skew draws a clock offset within half the job's ClockSkew either way.
func (r *runner) skew() time.Duration {
	half := Limits.ClockSkew / 2
	return r.dice.durationIn(-half, half+1)
}

// trigger runs the ticks: every TickEvery, the next tick's triggers, maybe
// a forced replay of it a moment later, and the poison planned for it. It
// returns once every trigger, replay and stale copy is done.
func (r *runner) trigger(ctx context.Context) {
	cfg := r.cfg
	base := time.Now().UTC().Truncate(time.Minute).Add(-time.Duration(cfg.Ticks+2) * time.Minute)
	replayed := make([]bool, cfg.Ticks)
	replays := 0
	for i := range cfg.Ticks {
		r.ticks = append(r.ticks, base.Add(time.Duration(i)*time.Minute))
		replayed[i] = i > 0 && r.dice.float() < cfg.Replays
		if replayed[i] {
			replays++
		}
	}
	// At least one replay when replays are asked for: the superseded check
	// needs one. Tick 0 is never replayed.
	if cfg.Replays > 0 && replays == 0 && cfg.Ticks > 1 {
		replayed[1+r.dice.intN(cfg.Ticks-1)] = true
	}
	var plain []int // ticks no replay moves on: poison that needs a stable generation goes there
	for i := range cfg.Ticks {
		if !replayed[i] {
			plain = append(plain, i)
		}
	}
	items := len(jobspec.ItemNames(Job(0, nil, false)))
	n := max(len(poisonKinds), int(math.Round(cfg.Poison*float64(cfg.Ticks*items)*(1+cfg.Replays))))
	poisonAt := make([][]int, cfg.Ticks)
	for p := range n {
		i := plain[r.dice.intN(len(plain))]
		poisonAt[i] = append(poisonAt[i], p)
	}

	var wg sync.WaitGroup
	var missedReplay atomic.Pointer[time.Time] // a planned replay that did not take
	var replayAt *time.Time                    // the trigger time of a tick planned for a replay
	for i, nominal := range r.ticks {
		at := nominal.Add(r.dice.durationIn(0, 50*time.Second))
		r.lastAt = at
		wg.Go(func() { r.coords.tick(ctx, at) })
		if replayed[i] {
			replayAt = &at
			delay := r.dice.durationIn(20*time.Millisecond, 400*time.Millisecond)
			wg.Go(func() {
				if sleep(ctx, delay) != nil {
					return
				}
				if cfg.MissReplays || !r.coords.replay(ctx, at) {
					missedReplay.Store(&at)
					return
				}
				r.sendStale(ctx, nominal)
			})
		}
		for _, p := range poisonAt[i] {
			if _, err := queue.SendAll(ctx, r.b.Work, []queue.Message{poison(p, nominal, time.Now())}, nil); err == nil {
				r.poisonSent++
			}
		}
		if step := cfg.Ticks / 10; step > 1 && (i+1)%step == 0 {
			r.logf("%s: %d of %d ticks triggered", r.h.Name, i+1, cfg.Ticks)
		}
		if sleep(ctx, cfg.TickEvery) != nil {
			break
		}
	}
	wg.Wait()
	// The superseded check judges stale copies handled after a replay.
	// When none was sent (under load every planned replay can miss: the
	// tick's first run opened late, or each forced trigger found the lease
	// held or was killed), make the event occur with the fault-free
	// coordinator rather than report an empty sample as a miss.
	if cfg.Replays > 0 && r.staleSent.Load() == 0 && ctx.Err() == nil {
		at := r.lastAt // no poison needing a stable generation is planned on a replayed tick
		if p := missedReplay.Load(); p != nil {
			at = *p
		} else if replayAt != nil {
			at = *replayAt
		}
		r.logf("%s: no stale copy was sent during the run; forcing a replay of %s with the fault-free coordinator", r.h.Name, at.Truncate(time.Minute).Format(time.RFC3339))
		if r.coords.replayFaultFree(ctx, at) {
			r.sendStale(ctx, at.UTC().Truncate(time.Minute))
		}
	}
}

func (r *runner) logf(format string, args ...any) {
	if r.cfg.Logf != nil {
		r.cfg.Logf(format, args...)
	}
}

// sendStale sends, once the consumers must know the tick's newest
// generation, copies of two messages of the generation before it: the
// redeliveries of old-generation messages a forced replay leaves behind.
func (r *runner) sendStale(ctx context.Context, nominal time.Time) {
	run, err := r.b.Ledger.GetRun(ctx, fx.Name, nominal)
	if err != nil || run.ID.Generation < 2 {
		return
	}
	opened, ok := r.coords.opened.supersededAt(nominal, run.ID.Generation-1)
	if !ok {
		return
	}
	wait := time.Until(opened.Add(supersededGrace)) + r.dice.durationIn(0, 300*time.Millisecond)
	if sleep(ctx, wait) != nil {
		return
	}
	assets := fx.Job(nil).Assets
	msgs := []queue.Message{
		staleCopy(nominal, run.ID.Generation-1, assets[r.dice.intN(len(assets))]),
		staleCopy(nominal, run.ID.Generation-1, assets[r.dice.intN(len(assets))]),
	}
	if sent, _ := queue.SendAll(ctx, r.b.Work, msgs, nil); sent > 0 {
		r.staleSent.Add(int64(sent))
	}
}

// settle passes a fault-free coordinator over the job until every tick's
// run has finished and the work queue is empty. It gives up after
// cfg.Settle without progress (no run finished, the queue no smaller), or
// after four times cfg.Settle in all: a machine under load settles
// slowly, a stuck run does not settle at all.
func (r *runner) settle(ctx context.Context) {
	start := time.Now()
	limit := start.Add(4 * r.cfg.Settle)
	deadline := start.Add(r.cfg.Settle)
	quiet := 0
	unfinished, depth := -1, -1
	for time.Now().Before(deadline) && ctx.Err() == nil {
		_, _ = r.coords.pass(ctx, r.lastAt)
		u, d := r.unfinished(ctx), r.queueDepth(ctx)
		if u == 0 && d == 0 {
			if quiet++; quiet >= 2 {
				r.logf("%s: settled in %s", r.h.Name, time.Since(start).Round(100*time.Millisecond))
				return
			}
		} else {
			quiet = 0
		}
		if (unfinished >= 0 && u < unfinished) || (depth >= 0 && d < depth) {
			deadline = time.Now().Add(r.cfg.Settle) // progress: wait on, within the limit
			if deadline.After(limit) {
				deadline = limit
			}
		}
		unfinished, depth = u, d
		_ = sleep(ctx, 250*time.Millisecond)
	}
	r.logf("%s: not settled after %s (the last %s without progress): %d runs unfinished, %d messages queued",
		r.h.Name, time.Since(start).Round(100*time.Millisecond), r.cfg.Settle, unfinished, depth)
}

// unfinished counts the ticks whose run is not complete or partial.
func (r *runner) unfinished(ctx context.Context) int {
	n := 0
	for _, nominal := range r.ticks {
		run, err := r.b.Ledger.GetRun(ctx, fx.Name, nominal)
		if err != nil || !run.State.Finished() {
			n++
		}
	}
	return n
}

// queueDepth counts the work queue's messages, visible, in flight or
// delayed; a queue that cannot count is taken as empty, and one that
// fails to answer as holding one message.
func (r *runner) queueDepth(ctx context.Context) int {
	d, err := queue.OpsOf(r.b.Work).Depth(ctx)
	if errors.Is(err, errors.ErrUnsupported) {
		return 0
	}
	if err != nil {
		return 1
	}
	return d.Total()
}

// deadLetters returns every message of the dead-letter queue.
func (r *runner) deadLetters(ctx context.Context) ([]queue.Peeked, error) {
	if r.b.DeadLetter == nil {
		return nil, nil
	}
	return queue.OpsOf(r.b.DeadLetter).Peek(ctx, 0)
}
