package bench

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/engine"
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
//     take batches of 10 and process each batch's items at once, so that
//     EndToEndConsumers × 10 items are in flight; each item is vouched
//     for, claimed and completed in the ledger, and its message deleted;
//   - River: one client with MaxWorkers = EndToEndConsumers × 10 on the
//     default queue, its default fetch settings (FetchCooldown 100 ms,
//     FetchPollInterval 1 s, LISTEN/NOTIFY on) and its default batch
//     completer; the items are inserted by one InsertMany call with
//     UniqueOpts{ByArgs: true} (a redelivered or re-enqueued item is one
//     job: the idempotency baton's claims give), and the round ends when
//     n JobCompleted events arrived;
//   - references on the same server: a bare INSERT … ON CONFLICT … WHERE
//     (the raw conditional write, ÷ 2 writes per item) and a bare SKIP
//     LOCKED dequeue (DELETE … WHERE id IN (SELECT … FOR UPDATE SKIP
//     LOCKED LIMIT 10), as many workers as baton's pollers).
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

// riverVersion is the River module this binary links.
func riverVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/riverqueue/river" {
				return d.Version
			}
		}
	}
	return "(unknown version)"
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
	inFlight := pollers * queue.MaxBatch

	// River on the same database: its own pool, counted alike.
	rt := &RoundTrips{}
	pool, err := NewCountedPool(ctx, env.DSN, rt)
	if err != nil {
		return err
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
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
	client, err := river.NewClient(driver, &river.Config{
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: inFlight}},
		Workers: workers,
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}
	events, unsubscribe := client.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted}, ChanSize: 2 * n})
	defer unsubscribe()
	if err := client.Start(ctx); err != nil {
		return fmt.Errorf("river start: %w", err)
	}
	defer func() { _ = client.Stop(context.WithoutCancel(ctx)) }()

	riverRound := func(round int) (side, error) {
		params := make([]river.InsertManyParams, n)
		for i := range params {
			params[i] = river.InsertManyParams{Args: riverArgs{Round: round, Asset: fmt.Sprintf("A%05d", i)}}
		}
		before, called := rt.Load(), riverCalls.Load()
		start := time.Now()
		if _, err := client.InsertMany(ctx, params); err != nil {
			return side{}, fmt.Errorf("river insert: %w", err)
		}
		for done := 0; done < n; {
			select {
			case ev := <-events:
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
		return side{rate: float64(n) / elapsed.Seconds(), roundTrips: float64(rt.Load()-before) / float64(n)}, nil
	}

	batonRound := func(round int) (side, error) {
		proc := &sleeper{}
		j := syntheticJob(fmt.Sprintf("cmp%d", round), n, queue.MaxBatch, proc)
		e, err := engine.New(env.Backend, engine.Options{
			Catalog: baton.MustCatalog(j), Consumers: pollers, BatchSize: queue.MaxBatch,
			BatchTimeout: time.Minute, Owner: "bench",
		})
		if err != nil {
			return side{}, err
		}
		c := consume(ctx, e, pollers, queue.MaxBatch, n)
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

	var batons, rivers []side
	for round := range max(r.Config.Rounds, 1) {
		b, err := batonRound(round)
		if err != nil {
			return fmt.Errorf("baton round %d: %w", round, err)
		}
		r.logf("  round %d baton: %.0f items/s, %.2f round trips per item", round, b.rate, b.roundTrips)
		rv, err := riverRound(round)
		if err != nil {
			return fmt.Errorf("river round %d: %w", round, err)
		}
		r.logf("  round %d river: %.0f items/s, %.2f round trips per item", round, rv.rate, rv.roundTrips)
		batons, rivers = append(batons, b), append(rivers, rv)
	}

	// The raw references, after the rounds.
	var rawSeq atomic.Int64
	rawWrites, err := RunWorkers(ctx, inFlight, r.Config.Window, func(ctx context.Context, _ int) (int, error) {
		return 1, env.RawWriteFunc(ctx, fmt.Sprintf("cmp-%d", rawSeq.Add(1)))
	})
	if err != nil {
		return fmt.Errorf("raw writes: %w", err)
	}
	dequeue, err := rawDequeueRate(ctx, env.Pool, n, pollers, queue.MaxBatch)
	if err != nil {
		return err
	}
	r.logf("  bare INSERT … ON CONFLICT, %d writers: %.0f/s; bare SKIP LOCKED dequeue, %d workers × %d: %.0f jobs/s",
		inFlight, rawWrites.PerSecond(), pollers, queue.MaxBatch, dequeue)

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
	bRate, rRate := median(rates(batons)), median(rates(rivers))
	setup := fmt.Sprintf("River %s (riverpgxv5), MaxWorkers %d, default fetch (cooldown %s, poll %s), InsertMany, unique by args, batch completer",
		riverVersion(), inFlight, river.FetchCooldownDefault, river.FetchPollIntervalDefault)
	r.add(Row{
		Scenario: "7 river", Backend: t.Name,
		Figure: fmt.Sprintf("%s zero-work items end to end, idempotent completion, %d in flight (baton: %d pollers × %d), items/s",
			number(float64(n)), inFlight, pollers, queue.MaxBatch),
		Value: bRate, Reference: rRate, Unit: Rate, Goal: RatioAtLeast(1),
		RefText: setup + fmt.Sprintf("; median of %d alternated rounds each, same database", len(rivers)),
		Note:    "baton with its fenced lease, run record and vouched messages",
	}, Row{
		Scenario: "7 river", Backend: t.Name,
		Figure: "round trips per item (statements, batches, prepares; background work included), baton",
		Value:  median(trips(batons)), Reference: median(trips(rivers)), Unit: Count,
		RefText: "River, same work, same count",
	}, Row{
		Scenario: "7 river", Backend: t.Name,
		Figure: "baton items/s, against the bare conditional write",
		Value:  bRate, Reference: rawWrites.PerSecond() / writesPerItem, Unit: Rate,
		RefText: fmt.Sprintf("bare INSERT … ON CONFLICT … WHERE/s ÷ %d writes per item, %d writers", writesPerItem, inFlight),
	}, Row{
		Scenario: "7 river", Backend: t.Name,
		Figure: "baton items/s, against the bare queue",
		Value:  bRate, Reference: dequeue, Unit: Rate,
		RefText: fmt.Sprintf("bare SKIP LOCKED dequeue (take and delete, %d at a time), %d workers, jobs/s", queue.MaxBatch, pollers),
	}, Row{
		Scenario: "7 river", Backend: t.Name,
		Figure: "River items/s, against the bare queue",
		Value:  rRate, Reference: dequeue, Unit: Rate,
		RefText: "as above",
	})
	return nil
}
