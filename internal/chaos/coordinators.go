package chaos

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
)

// invocationPlan is the fault of one coordinator invocation. Once the
// invocation holds the lease, it is doomed with probability kills: it dies
// at one of its next calls, before the call or once the call took effect
// (the acquisition itself included).
type invocationPlan struct {
	mu       sync.Mutex
	dice     *dice
	kills    float64
	acquired bool // the invocation took the lease
	killAt   int  // the call it dies at; 0: it lives
	late     bool // it dies once that call took effect
	calls    int
	killed   bool
}

func (p *invocationPlan) before(string, string) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killed {
		return 0, errKilled
	}
	p.calls++
	if p.calls == p.killAt && !p.late {
		p.killed = true
		return 0, errKilled
	}
	return p.calls, nil
}

func (p *invocationPlan) after(ticket int, op, _ string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killed {
		return errKilled
	}
	if op == opAcquire && !p.acquired {
		p.acquired = true
		if p.dice.float() < p.kills {
			// Die after this call (0) or at one of the next ones.
			p.killAt = ticket + p.dice.intN(maxCoordinatorCalls)
			p.late = p.killAt == ticket || p.dice.intN(2) == 1
		}
	}
	if ticket == p.killAt && p.late {
		p.killed = true
		return errKilled
	}
	return nil
}

func (p *invocationPlan) state() (acquired, killed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acquired, p.killed
}

// maxCoordinatorCalls bounds how many calls after its acquisition a doomed
// invocation dies: one holding the lease makes about ten (open, three
// chunks sent and checkpointed, settling and tending earlier runs,
// release).
const maxCoordinatorCalls = 10

// Trigger retries: a trigger that failed, or found its tick pending behind
// another invocation's lease, is invoked again, up to triggerTries times
// about triggerRetry apart (Lambda's asynchronous retries, the scheduler's
// retry policy, whose retries span hours). They span many lease TTLs:
// every tick's triggers compete for the job's one lease, a killed
// invocation holds it for a TTL, and each invocation fans out the job's 68
// items and tends its earlier runs while it holds it.
const (
	triggerTries = 40
	triggerRetry = 500 * time.Millisecond
)

// openings records when each generation of each tick was opened: the
// time OpenRun returned, by the real clock.
type openings struct {
	mu sync.Mutex
	at map[int64]map[int]time.Time // nominal (unix ns) → generation → opened
}

func (o *openings) add(id ledger.RunID, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.at == nil {
		o.at = map[int64]map[int]time.Time{}
	}
	k := id.Nominal.UnixNano()
	if o.at[k] == nil {
		o.at[k] = map[int]time.Time{}
	}
	o.at[k][id.Generation] = at
}

// supersededAt returns when a generation after gen of the tick was first
// opened; ok is false when none was.
func (o *openings) supersededAt(nominal time.Time, gen int) (at time.Time, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for g, t := range o.at[nominal.UnixNano()] {
		if g > gen && (!ok || t.Before(at)) {
			at, ok = t, true
		}
	}
	return at, ok
}

// replays returns how many generations after the first were opened.
func (o *openings) replays() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, gens := range o.at {
		for g := range gens {
			if g > 1 {
				n++
			}
		}
	}
	return n
}

// openingLedger records in o every generation its OpenRun opens.
type openingLedger struct {
	ledger.Store
	o *openings
}

func (l openingLedger) OpenRun(ctx context.Context, p ledger.OpenRunParams) (ledger.Run, ledger.OpenOutcome, error) {
	run, out, err := l.Store.OpenRun(ctx, p)
	if err == nil && out == ledger.Opened {
		l.o.add(run.ID, time.Now())
	}
	return run, out, err
}

// coordinators are the invocations of the job's coordinator: one engine
// per concurrent trigger, each with its own owner and clock, on one
// backend.
type coordinators struct {
	engines []*exec.Runtime
	final   *exec.Runtime // fault-free: the settle phase's pass
	dice    *dice
	kills   float64
	opened  *openings

	invocations, holders, killed atomic.Int64
}

// newCoordinators returns n coordinator engines on b. skew draws each
// one's clock offset.
func newCoordinators(b backend.Backend, n int, d *dice, kills float64, skew func() time.Duration, bulk bool) (*coordinators, error) {
	c := &coordinators{dice: d, kills: kills, opened: &openings{}}
	b.Ledger = openingLedger{Store: b.Ledger, o: c.opened}
	fb := faulty(b)
	cat := baton.MustCatalog(Job(0, nil, bulk))
	for i := range n + 1 {
		off := skew()
		e, err := exec.New(fb, exec.Options{
			Catalog: cat, Owner: "coordinator-" + strconv.Itoa(i), BatchTimeout: batchTimeout,
			NowFunc: func() time.Time { return time.Now().Add(off) },
		})
		if err != nil {
			return nil, err
		}
		// Small chunks, so that a kill can land between two checkpoints.
		e.Coordinator.Checkpoint = 3
		if i == n {
			c.final = e
		} else {
			c.engines = append(c.engines, e)
		}
	}
	return c, nil
}

// invoke runs one coordinator invocation of slot's engine; one that takes
// the lease is killed with probability kills.
func (c *coordinators) invoke(ctx context.Context, slot int, at time.Time, force bool) (coordinator.Summary, error) {
	plan := &invocationPlan{dice: c.dice, kills: c.kills}
	sum, err := c.engines[slot].Trigger(withFault(ctx, plan), Job(0, nil, false).Name, at, force)
	c.invocations.Add(1)
	acquired, killed := plan.state()
	if acquired {
		c.holders.Add(1)
	}
	if killed {
		c.killed.Add(1)
	}
	return sum, err
}

// tick triggers the tick of at once per engine, at the same time, each
// trigger retried while it fails or finds its tick pending.
func (c *coordinators) tick(ctx context.Context, at time.Time) {
	var wg sync.WaitGroup
	for slot := range c.engines {
		wg.Go(func() {
			for range triggerTries {
				sum, err := c.invoke(ctx, slot, at, false)
				if err == nil && !(sum.Outcome == coordinator.OutcomeSkipped && sum.Pending) && sum.Stopped == "" {
					return
				}
				if sleep(ctx, c.dice.durationIn(triggerRetry/2, triggerRetry*3/2)) != nil {
					return
				}
			}
		})
	}
	wg.Wait()
}

// firstRunWait bounds how long a replay waits for the tick's first run to
// open: on a loaded machine the tick's triggers may hold the lease, be
// killed and retry for tens of seconds before one opens it.
const firstRunWait = 2 * time.Minute

// replay forces a new generation of the tick of at once its first run is
// open (mid-flight), retried while another invocation holds the lease, or
// when one was killed before it opened the generation. It reports whether
// a newer generation is open when it returns.
func (c *coordinators) replay(ctx context.Context, at time.Time) bool {
	before, ok := c.firstGeneration(ctx, at)
	if !ok {
		return false
	}
	slot := c.dice.intN(len(c.engines))
	for range triggerTries {
		if _, err := c.invoke(ctx, slot, at, true); err == nil || c.generation(ctx, at) > before {
			// A forced trigger that returned without error opened a
			// generation; one killed may have opened it before it died.
			if c.generation(ctx, at) > before {
				return true
			}
		}
		if sleep(ctx, c.dice.durationIn(triggerRetry/2, triggerRetry*3/2)) != nil {
			return false
		}
	}
	return c.generation(ctx, at) > before
}

// replayFaultFree forces a new generation of the tick of at with the
// fault-free coordinator, retried while another invocation holds the
// lease: the run's own fault-injecting replays may all have missed under
// load, and the superseded check needs one that took.
func (c *coordinators) replayFaultFree(ctx context.Context, at time.Time) bool {
	before, ok := c.firstGeneration(ctx, at)
	if !ok {
		return false
	}
	for range triggerTries {
		_, _ = c.final.Trigger(ctx, Job(0, nil, false).Name, at, true)
		if c.generation(ctx, at) > before {
			return true
		}
		if sleep(ctx, c.dice.durationIn(triggerRetry/2, triggerRetry*3/2)) != nil {
			return false
		}
	}
	return false
}

// firstGeneration waits (up to firstRunWait) for the tick of at to have a
// run and returns its newest generation.
func (c *coordinators) firstGeneration(ctx context.Context, at time.Time) (int, bool) {
	for wait := time.Now().Add(firstRunWait); ; {
		if g := c.generation(ctx, at); g > 0 {
			return g, true
		}
		if time.Now().After(wait) || sleep(ctx, 20*time.Millisecond) != nil {
			return 0, false
		}
	}
}

// generation is the newest generation of the tick of at, 0 when it has no
// run yet.
func (c *coordinators) generation(ctx context.Context, at time.Time) int {
	run, err := c.final.Coordinator.Ledger.GetRun(ctx, Job(0, nil, false).Name, c.nominal(at))
	if err != nil {
		return 0
	}
	return run.ID.Generation
}

// nominal is the tick a trigger at at asks for (the job runs every
// minute).
func (c *coordinators) nominal(at time.Time) time.Time { return at.UTC().Truncate(time.Minute) }

// pass is the settle phase's coordinator: a fault-free invocation for the
// tick of at, which resumes the runs left fanning out and settles the
// finished ones, back to the earliest unfinished run.
func (c *coordinators) pass(ctx context.Context, at time.Time) (coordinator.Summary, error) {
	return c.final.Trigger(ctx, Job(0, nil, false).Name, at, false)
}

// sleep waits d or until ctx ends (then it returns ctx's error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
