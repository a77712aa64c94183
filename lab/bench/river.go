package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/queue"
)

// Scenario 7 runs the same work on baton's PostgreSQL engine and on River
// (github.com/riverqueue/river with riverpgxv5), on the same database of
// the same server, in the same run, rounds alternated:
//
//   - the work: n zero-work items, enqueued at once and each processed to
//     an idempotent completion;
//   - baton: one coordinator invocation fans the items out (fenced lease,
//     run record, batches of 10, 10 in flight); EndToEndConsumers pollers
//     take batches as large as the queue takes (100 on PostgreSQL:
//     queue.LargeBatches) and process each batch's items at once, so that
//     EndToEndConsumers × 100 items are in flight; each item is vouched
//     for, claimed and completed in the ledger (a batch's claims in one
//     pipelined round trip, its completions in another:
//     ledger.BatchClaimer, ledger.BatchCompleter), and its message
//     deleted;
//   - River: one client with MaxWorkers = EndToEndConsumers × 100 on the
//     default queue, its default fetch settings (FetchCooldown 100 ms,
//     FetchPollInterval 1 s, LISTEN/NOTIFY on) and its default batch
//     completer; the items are inserted by one InsertMany call with
//     UniqueOpts{ByArgs: true} (a redelivered or re-enqueued item is one
//     job: the idempotency baton's claims give), and the round ends when
//     n JobCompleted events arrived;
//   - references on the same server: a bare INSERT … ON CONFLICT … WHERE
//     (the raw conditional write, ÷ 2 writes per item) and a bare SKIP
//     LOCKED dequeue (DELETE … WHERE id IN (SELECT … FOR UPDATE SKIP
//     LOCKED LIMIT 100), as many workers as baton's pollers);
//   - idle to done: one item at a time on an idle system, a one-item
//     job's tick at a time on baton (from the coordinator's send to the
//     consumer's batch reported), one job inserted at a time on River
//     (from the insert to its JobCompleted event), alternated.
//
// Round trips are counted by a pgx tracer on each side's pool: every
// statement, batch, prepare and copy sent, background work included.

// riverArgs is one item of a River round, unique by its arguments.
type riverArgs struct {
	Round int    `json:"round"`
	Asset string `json:"asset"`
}

func (riverArgs) Kind() string { return "baton_bench_item" }

func (riverArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// riverWorker does no work, as baton's zero-work processor.
type riverWorker struct {
	river.WorkerDefaults[riverArgs]
	calls *atomic.Int64
}

func (w *riverWorker) Work(context.Context, *river.Job[riverArgs]) error {
	w.calls.Add(1)
	return nil
}

// riverVersion is the River module this binary links: from the build
// information, else from the lab module's go.mod (test binaries carry no
// dependency versions).
func riverVersion() string {
	const path = "github.com/riverqueue/river"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	if _, lab, err := ModuleRoots(); err == nil {
		if b, err := os.ReadFile(filepath.Join(lab, "go.mod")); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if f := strings.Fields(line); len(f) >= 2 && f[0] == path {
					return f[1]
				}
			}
		}
	}
	return "(unknown version)"
}

// riverClient is one River client on a queue of its own, with its
// JobCompleted events and its pool's round trips.
type riverClient struct {
	queue  string
	client *river.Client[pgx.Tx]
	events <-chan *river.Event
	rt     *RoundTrips
}

// side is one measured round of one system.
type side struct {
	rate       float64 // items per second
	roundTrips float64 // per item
}

func (r *Runner) river(ctx context.Context, t Target) error {
	if !t.River {
		return nil
	}
	env, err := r.open(ctx, t, "river")
	if err != nil {
		return err
	}
	defer env.Close()
	n, pollers := r.Config.EndToEndItems, r.Config.EndToEndConsumers
	// baton's batches are as large as the queue takes (100 on
	// PostgreSQL), each batch's items in flight at once; River gets as
	// many workers.
	batch := queue.BatchLimit(env.Plain.Work)
	inFlight := pollers * batch

	// River on the same database: a pool of its own per client, counted
	// alike.
	var stopFuncs []func()
	defer func() {
		for i := len(stopFuncs) - 1; i >= 0; i-- {
			stopFuncs[i]()
		}
	}()
	newDriver := func() (*riverpgxv5.Driver, *RoundTrips, error) {
		rt := &RoundTrips{}
		pool, err := NewCountedPool(ctx, env.DSN, rt)
		if err != nil {
			return nil, nil, err
		}
		stopFuncs = append(stopFuncs, pool.Close)
		return riverpgxv5.New(pool), rt, nil
	}
	driver, _, err := newDriver()
	if err != nil {
		return err
	}
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river migrate: %w", err)
	}
	var riverCalls atomic.Int64
	workers := river.NewWorkers()
	river.AddWorker(workers, &riverWorker{calls: &riverCalls})
	// Two clients, each on a queue of its own: River as it ships (its
	// default fetch settings), and River tuned for throughput (the least
	// FetchCooldown it allows), a harder reference.
	newClient := func(queueName string, qc river.QueueConfig) (riverClient, error) {
		driver, rt, err := newDriver()
		if err != nil {
			return riverClient{}, err
		}
		c, err := river.NewClient(driver, &river.Config{
			Queues:  map[string]river.QueueConfig{queueName: qc},
			Workers: workers,
			Logger:  slog.New(slog.DiscardHandler),
		})
		if err != nil {
			return riverClient{}, err
		}
		events, unsubscribe := c.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted}, ChanSize: 2 * n})
		if err := c.Start(ctx); err != nil {
			unsubscribe()
			return riverClient{}, fmt.Errorf("river start: %w", err)
		}
		// Stopped before its pool is closed (stopFuncs run last first).
		stopFuncs = append(stopFuncs, func() {
			_ = c.Stop(context.WithoutCancel(ctx))
			unsubscribe()
		})
		return riverClient{queue: queueName, client: c, events: events, rt: rt}, nil
	}
	shipped, err := newClient(river.QueueDefault, river.QueueConfig{MaxWorkers: inFlight})
	if err != nil {
		return err
	}
	tuned, err := newClient("tuned", river.QueueConfig{MaxWorkers: inFlight, FetchCooldown: river.FetchCooldownMin, FetchPollInterval: river.FetchPollIntervalMin})
	if err != nil {
		return err
	}

	riverRound := func(c riverClient, round int) (side, error) {
		params := make([]river.InsertManyParams, n)
		for i := range params {
			params[i] = river.InsertManyParams{
				Args:       riverArgs{Round: round, Asset: fmt.Sprintf("A%05d", i)},
				InsertOpts: &river.InsertOpts{Queue: c.queue, UniqueOpts: river.UniqueOpts{ByArgs: true}},
			}
		}
		before, called := c.rt.Load(), riverCalls.Load()
		start := time.Now()
		if _, err := c.client.InsertMany(ctx, params); err != nil {
			return side{}, fmt.Errorf("river insert: %w", err)
		}
		for done := 0; done < n; {
			select {
			case ev := <-c.events:
				if ev.Job != nil {
					done++
				}
			case <-ctx.Done():
				return side{}, fmt.Errorf("river: %d of %d jobs completed: %w", done, n, ctx.Err())
			}
		}
		elapsed := time.Since(start)
		if got := riverCalls.Load() - called; got != int64(n) {
			return side{}, fmt.Errorf("river worked %d jobs for %d", got, n)
		}
		return side{rate: float64(n) / elapsed.Seconds(), roundTrips: float64(c.rt.Load()-before) / float64(n)}, nil
	}

	batonRound := func(round int) (side, error) {
		proc := &sleeper{}
		j := syntheticJob(fmt.Sprintf("cmp%d", round), n, batch, proc)
		e, err := exec.New(env.Backend, exec.Options{
			Catalog: baton.MustCatalog(j), Consumers: pollers, BatchSize: batch,
			BatchTimeout: time.Minute, Owner: "bench",
		})
		if err != nil {
			return side{}, err
		}
		c := consume(ctx, e, pollers, batch, n)
		defer c.Stop()
		env.Calls.Reset()
		before := env.RoundTrips.Load()
		start := time.Now()
		sum, err := e.Trigger(ctx, j.Name, start, false)
		if err != nil {
			return side{}, fmt.Errorf("coordinator: %w", err)
		}
		last, err := c.Wait(ctx)
		if err != nil {
			return side{}, err
		}
		elapsed := last.Sub(start)
		trips := env.RoundTrips.Load() - before
		c.Stop()
		if _, err := checkSucceeded(ctx, env.Plain.Ledger, sum.Run, n); err != nil {
			return side{}, err
		}
		if got := proc.calls.Load(); got != int64(n) {
			return side{}, fmt.Errorf("processor called %d times for %d items", got, n)
		}
		r.logf("  baton port calls per item: %s", perItem(env.Calls.Snapshot(), n))
		return side{rate: float64(n) / elapsed.Seconds(), roundTrips: float64(trips) / float64(n)}, nil
	}

	var batons, rivers, tunedRivers []side
	for round := range max(r.Config.Rounds, 1) {
		b, err := batonRound(round)
		if err != nil {
			return fmt.Errorf("baton round %d: %w", round, err)
		}
		r.logf("  round %d baton: %.0f items/s, %.2f round trips per item", round, b.rate, b.roundTrips)
		rv, err := riverRound(shipped, 2*round)
		if err != nil {
			return fmt.Errorf("river round %d: %w", round, err)
		}
		r.logf("  round %d river: %.0f items/s, %.2f round trips per item", round, rv.rate, rv.roundTrips)
		tv, err := riverRound(tuned, 2*round+1)
		if err != nil {
			return fmt.Errorf("tuned river round %d: %w", round, err)
		}
		r.logf("  round %d river, fetch cooldown %s: %.0f items/s, %.2f round trips per item", round, river.FetchCooldownMin, tv.rate, tv.roundTrips)
		batons, rivers, tunedRivers = append(batons, b), append(rivers, rv), append(tunedRivers, tv)
	}

	// The raw references, after the rounds.
	var rawSeq atomic.Int64
	// The best of two numbers of writers: as many as baton has items in
	// flight, and a tenth of them (the server may write faster with fewer
	// connections contending), so that the reference is the server's rate,
	// not a crowd's.
	var rawWrites Load
	writers := inFlight
	for _, w := range []int{max(inFlight/10, 1), inFlight} {
		tp, err := RunWorkers(ctx, w, r.Config.Window, func(ctx context.Context, _ int) (int, error) {
			return 1, env.RawWriteFunc(ctx, fmt.Sprintf("cmp-%d", rawSeq.Add(1)))
		})
		if err != nil {
			return fmt.Errorf("raw writes, %d writers: %w", w, err)
		}
		r.logf("  bare INSERT … ON CONFLICT, %d writers: %.0f/s", w, tp.PerSecond())
		if w == max(inFlight/10, 1) || tp.PerSecond() > rawWrites.PerSecond() {
			rawWrites, writers = tp, w
		}
	}
	dequeue, err := rawDequeueRate(ctx, env.Pool, n, pollers, batch)
	if err != nil {
		return err
	}
	r.logf("  bare INSERT … ON CONFLICT, %d writers: %.0f/s; bare SKIP LOCKED dequeue, %d workers × %d: %.0f jobs/s",
		writers, rawWrites.PerSecond(), pollers, batch, dequeue)

	// Idle to done: one item at a time on an idle system, the three
	// alternated.
	lat, err := r.idleToDone(ctx, env, pollers, batch, []riverOne{
		func(seq int) (time.Duration, error) { return riverSingle(ctx, shipped, seq) },
		func(seq int) (time.Duration, error) { return riverSingle(ctx, tuned, seq) },
	})
	if err != nil {
		return err
	}

	rates := func(ss []side) []float64 {
		out := make([]float64, len(ss))
		for i, s := range ss {
			out[i] = s.rate
		}
		return out
	}
	trips := func(ss []side) []float64 {
		out := make([]float64, len(ss))
		for i, s := range ss {
			out[i] = s.roundTrips
		}
		return out
	}
	bRate, rRate, tRate := median(rates(batons)), median(rates(rivers)), median(rates(tunedRivers))
	setup := fmt.Sprintf("River %s (riverpgxv5), MaxWorkers %d, default fetch (cooldown %s, poll %s), InsertMany, unique by args, batch completer",
		riverVersion(), inFlight, river.FetchCooldownDefault, river.FetchPollIntervalDefault)
	r.add(Row{
		Scenario: "7 river", Backend: t.Name,
		Figure: fmt.Sprintf("%s zero-work items end to end, idempotent completion, %d in flight (baton: %d pollers × batches of %d), items/s",
			number(float64(n)), inFlight, pollers, batch),
		Value: bRate, Reference: rRate, Unit: Rate, Goal: RatioAtLeast(1),
		RefText: setup + fmt.Sprintf("; median of %d alternated rounds each, same database", len(rivers)),
		Note:    "baton with its fenced lease, run record and vouched messages",
	}, Row{
		Scenario: "7 river", Backend: t.Name,
		Figure: "the same, against River tuned for throughput",
		Value:  bRate, Reference: tRate, Unit: Rate, Goal: RatioAtLeast(1),
		RefText: fmt.Sprintf("River as above with FetchCooldown %s and FetchPollInterval %s (its minimums): its default cooldown caps a queue at MaxWorkers jobs per %s",
			river.FetchCooldownMin, river.FetchPollIntervalMin, river.FetchCooldownDefault),
	}, Row{
		Scenario: "7 river", Backend: t.Name,
		Figure: "round trips per item (statements, batches, prepares; background work included), baton",
		Value:  median(trips(batons)), Reference: median(trips(rivers)), Unit: Count, Goal: AtMost(0.25, Count),
		RefText: fmt.Sprintf("River as shipped, same work, same count (it fetches and completes many jobs per statement; baton claims, and completes, a batch's items in one pipelined round trip each); River tuned %.3f",
			median(trips(tunedRivers))),
	}, Row{
		Scenario: "7 river", Backend: t.Name,
		Figure: "baton items/s, against the bare conditional write",
		Value:  bRate, Reference: rawWrites.PerSecond() / writesPerItem, Unit: Rate, Goal: RatioAtLeast(0.5),
		RefText: fmt.Sprintf("bare INSERT … ON CONFLICT … WHERE/s ÷ %d writes per item, %d writers (the better of %d and %d)", writesPerItem, writers, max(inFlight/10, 1), inFlight),
	}, Row{
		Scenario: "7 river", Backend: t.Name,
		Figure: "baton items/s, against the bare queue",
		Value:  bRate, Reference: dequeue, Unit: Rate,
		RefText: fmt.Sprintf("bare SKIP LOCKED dequeue (take and delete, %d at a time), %d workers, jobs/s", batch, pollers),
	}, Row{
		Scenario: "7 river", Backend: t.Name,
		Figure: "River (tuned) items/s, against the bare queue",
		Value:  tRate, Reference: dequeue, Unit: Rate,
		RefText: "as above",
	})
	latText := fmt.Sprintf("River tuned, one job inserted at a time on the idle client, insert → its JobCompleted event, %d samples alternated with baton's (River as shipped: p50 %s, p99 %s)",
		lat.samples, format(lat.river[0].Percentile(50), Duration), format(lat.river[0].Percentile(99), Duration))
	r.add(Row{
		Scenario: "7 river", Backend: t.Name,
		Figure: "idle to done, one item at a time: enqueue → done p50 (the coordinator's send → the consumer's batch reported, LISTEN/NOTIFY wakes the idle pollers)",
		Value:  lat.baton.Percentile(50), Reference: lat.river[1].Percentile(50), Unit: Duration,
		RefText: latText,
	}, Row{
		Scenario: "7 river", Backend: t.Name,
		Figure: "idle to done, one item at a time: enqueue → done p99",
		Value:  lat.baton.Percentile(99), Reference: lat.river[1].Percentile(99), Unit: Duration,
		RefText: "as above, p99",
	})
	return nil
}

// riverOne measures one job of a River client, enqueue to done; seq makes
// its arguments unique.
type riverOne func(seq int) (time.Duration, error)

// riverSingle inserts one job into c's queue and returns the time from
// the insert to its JobCompleted event.
func riverSingle(ctx context.Context, c riverClient, seq int) (time.Duration, error) {
	start := time.Now()
	if _, err := c.client.Insert(ctx, riverArgs{Round: -1 - seq, Asset: "idle"}, &river.InsertOpts{Queue: c.queue}); err != nil {
		return 0, fmt.Errorf("river insert: %w", err)
	}
	select {
	case <-c.events:
		return time.Since(start), nil
	case <-ctx.Done():
		return 0, fmt.Errorf("river: one job not completed: %w", ctx.Err())
	}
}

// idleGap is the pause before each idle-to-done sample: long enough for
// every poller to be back in its long poll.
const idleGap = 20 * time.Millisecond

// latencies are the idle-to-done samples of each system.
type latencies struct {
	samples int
	baton   *Samples
	river   []*Samples // one per riverOne
}

// idleToDone measures enqueue → done of one item at a time on an idle
// system: baton (a one-item job, a tick at a time, its pollers idle in
// their long poll; from the coordinator's send to the consumer's batch
// reported) and each River function, alternated.
func (r *Runner) idleToDone(ctx context.Context, env *Env, pollers, batch int, rivers []riverOne) (latencies, error) {
	idleSamples := max(r.Config.IdleSamples, 1)
	out := latencies{samples: idleSamples, baton: &Samples{}}
	for range rivers {
		out.river = append(out.river, &Samples{})
	}
	sends := &sendClock{}
	b := env.Backend
	b.Work = timedQueue{Queue: b.Work, clock: sends}
	j := syntheticJob("idle", 1, batch, &sleeper{})
	e, err := exec.New(b, exec.Options{Catalog: baton.MustCatalog(j), Consumers: pollers, BatchSize: batch, BatchTimeout: time.Minute, Owner: "bench-idle"})
	if err != nil {
		return out, err
	}
	c := consume(ctx, e, pollers, batch, idleSamples)
	defer c.Stop()
	base := time.Now().Truncate(time.Minute)
	for i := range idleSamples {
		time.Sleep(idleGap)
		before, _ := c.Succeeded()
		// Past ticks, one per sample: each a run of its own.
		if _, err := e.Trigger(ctx, j.Name, base.Add(-time.Duration(idleSamples-i)*time.Minute), false); err != nil {
			return out, fmt.Errorf("idle coordinator: %w", err)
		}
		for {
			got, done := c.Succeeded()
			if got > before {
				out.baton.Add(done.Sub(sends.last()))
				break
			}
			if err := ctx.Err(); err != nil {
				return out, err
			}
			time.Sleep(100 * time.Microsecond)
		}
		for k, one := range rivers {
			time.Sleep(idleGap)
			d, err := one(i*len(rivers) + k) // unique arguments across the clients

			if err != nil {
				return out, err
			}
			out.river[k].Add(d)
		}
	}
	r.logf("  idle to done: baton p50 %s p99 %s; River p50 %s p99 %s; River tuned p50 %s p99 %s",
		format(out.baton.Percentile(50), Duration), format(out.baton.Percentile(99), Duration),
		format(out.river[0].Percentile(50), Duration), format(out.river[0].Percentile(99), Duration),
		format(out.river[len(rivers)-1].Percentile(50), Duration), format(out.river[len(rivers)-1].Percentile(99), Duration))
	return out, nil
}

// sendClock keeps when the last send began.
type sendClock struct {
	mu sync.Mutex
	at time.Time
}

func (s *sendClock) last() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.at
}

// timedQueue records when each send begins.
type timedQueue struct {
	backend.Queue
	clock *sendClock
}

func (q timedQueue) SendBatch(ctx context.Context, msgs []queue.Message) error {
	q.clock.mu.Lock()
	q.clock.at = time.Now()
	q.clock.mu.Unlock()
	return q.Queue.SendBatch(ctx, msgs)
}

// MaxBatch keeps the queue's batch limit visible.
func (q timedQueue) MaxBatchSize() int { return queue.BatchLimit(q.Queue) }
