package bench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
)

// The scale scenario (8) runs whole ticks of large zero-work runs: on the
// embedded store with the coordinator and the consumers each in a process
// of its own (the bench binary run again in a role), so that each role's
// peak RSS is its own; on the emulators in this process, behind the
// DynamoDB throttling proxy (see awsScale).

// ScaleRole is what a role process is asked to do.
type ScaleRole struct {
	Role      string // "coordinator" or "consumer"
	Store     string // the SQLite file
	Items     int
	Consumers int // consumer role: batches handled at once
	// ExpandFrom and ExpandItems are the coordinator's (0: its defaults).
	ExpandFrom, ExpandItems int
	// RunTime runs a job whose items are computed when its run opens
	// (runTimeJob) instead of a catalog of Items assets (scaleJob).
	RunTime bool
}

// ScaleResult is what a role process reports, on one line of JSON.
type ScaleResult struct {
	// Start is when the coordinator took the trigger (coordinator);
	// Enqueued when its last message was sent.
	Start, Enqueued time.Time
	ShardMessages   int
	// Invocations is the number of coordinator invocations the fan-out
	// took (each stops at the engine's batch timeout, as a Lambda's
	// deadline; the next resumes it).
	Invocations int
	// LastExpanded is when the last shard message was expanded, LastDone
	// when the last item succeeded (consumer).
	LastExpanded, LastDone time.Time
	Statuses               map[string]int
	Batches                int
	// Busy is the time spent handling batches, summed over batches.
	Busy time.Duration
	// PageReads is the number of pages of a run-time list the consumer
	// read (its membership checks; consumer.PageCache).
	PageReads int64
	// PeakRSS is the process's VmHWM when it reported, in bytes: its own
	// peak (the rusage of a child would include the parent's memory at
	// the fork, which Linux carries across exec).
	PeakRSS int64
}

// scaleJob is the job of a scale run of n items: a catalog of n assets,
// or with runTime a run-time list of n items.
func scaleJob(n, concurrency int, runTime bool) baton.Job {
	if runTime {
		return runTimeJob("scale", n, concurrency, &sleeper{})
	}
	return syntheticJob("scale", n, concurrency, &sleeper{})
}

// RunScaleRole runs one role of a scale run on the embedded store and
// returns what it measured.
func RunScaleRole(ctx context.Context, role ScaleRole) (ScaleResult, error) {
	b, err := sqlitebackend.Open(ctx, role.Store)
	if err != nil {
		return ScaleResult{}, err
	}
	defer b.Close()
	j := scaleJob(role.Items, queue.MaxBatch, role.RunTime)
	e, err := exec.New(b, exec.Options{Catalog: baton.MustCatalog(j), Consumers: max(role.Consumers, 1),
		BatchSize: queue.MaxBatch, BatchTimeout: time.Minute, Owner: "scale-" + role.Role})
	if err != nil {
		return ScaleResult{}, err
	}
	switch role.Role {
	case "coordinator":
		e.Coordinator.ExpandFrom, e.Coordinator.ExpandItems = role.ExpandFrom, role.ExpandItems
		start := time.Now()
		sum, invocations, err := fanOutWhole(ctx, e, j.Name, start, nil)
		if err != nil {
			return ScaleResult{}, err
		}
		if sum.Outcome != coordinator.OutcomeOpened || sum.Cursor != role.Items || role.RunTime && sum.Enqueued != role.Items {
			return ScaleResult{}, fmt.Errorf("coordinator: %s, cursor %d, %d enqueued, of %d", sum.Outcome, sum.Cursor, sum.Enqueued, role.Items)
		}
		return ScaleResult{Start: start, Enqueued: cmp.Or(sum.FannedOutAt, time.Now()), ShardMessages: sum.ShardMessages, Invocations: invocations}, nil
	case "consumer":
		c := consume(ctx, e, max(role.Consumers, 1), queue.MaxBatch, role.Items)
		last, err := c.Wait(ctx)
		c.Stop()
		if err != nil {
			return ScaleResult{}, err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return ScaleResult{LastDone: last, LastExpanded: c.lastExpanded, Statuses: c.statuses, Batches: c.batches, Busy: c.busy,
			PageReads: e.Consumer.Pages.Reads()}, nil
	}
	return ScaleResult{}, fmt.Errorf("unknown role %q", role.Role)
}

// ScaleRoleTest is the test that runs a role when the binary is run
// again with -scale.role (see startRole).
const ScaleRoleTest = "TestScaleRole"

// roleProcess is a running role process.
type roleProcess struct {
	cmd *osexec.Cmd
	out chan roleOutput
}

type roleOutput struct {
	res ScaleResult
	err error
}

// startRole runs the bench binary again in role.
func startRole(ctx context.Context, role ScaleRole) (*roleProcess, error) {
	cmd := osexec.CommandContext(ctx, os.Args[0], "-test.run", "^"+ScaleRoleTest+"$", "-test.timeout", "0",
		"-scale.role", role.Role, "-scale.store", role.Store, "-scale.items", strconv.Itoa(role.Items),
		"-scale.consumers", strconv.Itoa(role.Consumers),
		"-scale.expand-from", strconv.Itoa(role.ExpandFrom), "-scale.expand-items", strconv.Itoa(role.ExpandItems),
		"-scale.runtime="+strconv.FormatBool(role.RunTime))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s process: %w", role.Role, err)
	}
	p := &roleProcess{cmd: cmd, out: make(chan roleOutput, 1)}
	go func() {
		var res ScaleResult
		var found bool
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if rest, ok := bytesCut(line, scaleResultPrefix); ok {
				found = json.Unmarshal(rest, &res) == nil
			}
		}
		err := cmd.Wait()
		if err == nil && !found {
			err = fmt.Errorf("%s process reported no result", role.Role)
		}
		p.out <- roleOutput{res, err}
	}()
	return p, nil
}

// scaleResultPrefix starts the line a role process reports its result on.
const scaleResultPrefix = "scale-result: "

// PrintScaleResult prints res as a role process reports it, with the
// process's peak RSS.
func PrintScaleResult(res ScaleResult) {
	res.PeakRSS, _ = peakRSS(os.Getpid())
	b, _ := json.Marshal(res)
	fmt.Fprintf(os.Stdout, "%s%s\n", scaleResultPrefix, b)
}

func bytesCut(b []byte, prefix string) ([]byte, bool) {
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return nil, false
	}
	return b[len(prefix):], true
}

// wait waits for the role and returns its result and peak RSS in bytes.
func (p *roleProcess) wait() (ScaleResult, int64, error) {
	o := <-p.out
	if o.err == nil && o.res.PeakRSS <= 0 {
		o.err = fmt.Errorf("the role process reported no peak RSS")
	}
	return o.res, o.res.PeakRSS, o.err
}

// sqliteScale runs a scale tick of each size in r.Config.ScaleSQLite (a
// catalog job), then of each in r.Config.ScaleSQLiteRunTime (a run-time
// list).
func (r *Runner) sqliteScale(ctx context.Context, t Target) error {
	if err := r.sqliteScaleSizes(ctx, t, r.Config.ScaleSQLite, false); err != nil {
		return err
	}
	return r.sqliteScaleSizes(ctx, t, r.Config.ScaleSQLiteRunTime, true)
}

// sqliteScaleSizes runs a scale tick of each of sizes, of a run-time list
// with runTime.
func (r *Runner) sqliteScaleSizes(ctx context.Context, t Target, sizes []int, runTime bool) error {
	const scenario = "8 scale"
	var smallest *roleRSS // the peak RSS at the first size
	for _, n := range sizes {
		// The raw reference, on a fresh file of the same directory.
		env, err := r.open(ctx, t, "scale-raw")
		if err != nil {
			return err
		}
		raw, err := rawWriteRate(ctx, env, r.Config.Window)
		env.Close()
		if err != nil {
			return err
		}
		path := filepath.Join(t.dir, fmt.Sprintf("%sscale-%d.db", r.Prefix, n))
		b, err := sqlitebackend.Open(ctx, path) // the schema, before both roles open it
		if err != nil {
			return err
		}
		b.Close()
		role := ScaleRole{Store: path, Items: n, Consumers: r.Config.EndToEndConsumers,
			ExpandFrom: r.Config.ExpandFrom, ExpandItems: r.Config.ExpandItems, RunTime: runTime}
		role.Role = "consumer"
		cons, err := startRole(ctx, role)
		if err != nil {
			return err
		}
		role.Role = "coordinator"
		coord, err := startRole(ctx, role)
		if err != nil {
			return err
		}
		cres, crss, cerr := coord.wait()
		ures, urss, uerr := cons.wait()
		if err := errors.Join(cerr, uerr); err != nil {
			return fmt.Errorf("%d items: %w", n, err)
		}
		os.Remove(path)
		os.Remove(path + "-wal")
		os.Remove(path + "-shm")
		enqueued := cres.Enqueued
		if cres.ShardMessages > 0 {
			enqueued = ures.LastExpanded
		}
		toEnqueued, toDone := enqueued.Sub(cres.Start), ures.LastDone.Sub(cres.Start)
		rate := float64(n) / toDone.Seconds()
		r.logf("  %s: all enqueued %s, all done %s (%.0f/s; raw %.0f writes/s); %d shard messages, %d page reads; peak RSS coordinator %d MiB, consumer %d MiB; statuses %v",
			scaleSize(n, runTime), toEnqueued.Round(time.Millisecond), toDone.Round(time.Millisecond), rate, raw, cres.ShardMessages, ures.PageReads, crss>>20, urss>>20, ures.Statuses)
		sz := scaleSize(n, runTime)
		enqNote := fmt.Sprintf("%d shard messages from the coordinator (%s of fan-out)", cres.ShardMessages, cres.Enqueued.Sub(cres.Start).Round(time.Millisecond))
		if runTime {
			pages := (n + ledger.PageItems - 1) / ledger.PageItems
			sent := "a message per item"
			if cres.ShardMessages > 0 {
				sent = fmt.Sprintf("%d page shard messages (%s of fan-out), which the consumers expanded", cres.ShardMessages, cres.Enqueued.Sub(cres.Start).Round(time.Millisecond))
			}
			enqNote = fmt.Sprintf("the coordinator stored %d pages and sent %s, in %d invocations of at most a minute; the consumer read %d pages (%.4f per item)",
				pages, sent, cres.Invocations, ures.PageReads, float64(ures.PageReads)/float64(n))
		}
		r.add(
			Row{Scenario: scenario, Backend: t.Name, Figure: sz + ": tick → all enqueued", Value: toEnqueued.Seconds(), Unit: Duration,
				Reference: float64(n) / (raw / writesPerItem), RefText: "items ÷ (raw conditional writes/s ÷ 2): the whole run at the raw write rate",
				Note: enqNote},
			Row{Scenario: scenario, Backend: t.Name, Figure: sz + ": tick → all done", Value: toDone.Seconds(), Unit: Duration,
				Reference: float64(n) / (raw / writesPerItem), RefText: "as above"},
			Row{Scenario: scenario, Backend: t.Name, Figure: fmt.Sprintf("%s, %d consumers × %d: items/s", sz, role.Consumers, queue.MaxBatch), Value: rate, Unit: Rate,
				Reference: raw / writesPerItem, RefText: "raw conditional writes/s ÷ 2 writes per item (8 writers, just before)", Goal: RatioAtLeast(0.5)},
		)
		if smallest == nil {
			smallest = &roleRSS{n: n, coord: crss, consumer: urss}
		}
		ref := "the same at " + scaleSize(smallest.n, runTime)
		r.add(
			Row{Scenario: scenario, Backend: t.Name, Figure: sz + ": coordinator peak RSS (own process)", Value: float64(crss), Unit: Bytes,
				Reference: float64(smallest.coord), RefText: ref, Goal: RatioAtMost(2)},
			Row{Scenario: scenario, Backend: t.Name, Figure: sz + ": consumer peak RSS (own process)", Value: float64(urss), Unit: Bytes,
				Reference: float64(smallest.consumer), RefText: ref, Goal: RatioAtMost(2)},
		)
	}
	return nil
}

// scaleSize names a scale run of n items in its rows: "10,000 items", or
// "run-time list of 10,000 items".
func scaleSize(n int, runTime bool) string {
	if runTime {
		return "run-time list of " + number(float64(n)) + " items"
	}
	return number(float64(n)) + " items"
}

// roleRSS is the peak RSS of each role at one size.
type roleRSS struct {
	n               int
	coord, consumer int64
}

// rawWriteRate measures raw conditional writes per second with 8 writers
// for d.
func rawWriteRate(ctx context.Context, env *Env, d time.Duration) (float64, error) {
	seq := 0
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	l, err := RunWorkers(ctx, 8, d, func(ctx context.Context, _ int) (int, error) {
		<-mu
		seq++
		k := fmt.Sprintf("scale-raw-%d", seq)
		mu <- struct{}{}
		return 1, env.RawWriteFunc(ctx, k)
	})
	if err != nil {
		return 0, fmt.Errorf("raw writes: %w", err)
	}
	return l.PerSecond(), nil
}

// fanOutWhole triggers the tick at of job on e until its run is fanned
// out: a run-time list of a million items takes its coordinator longer
// than one invocation's deadline (the engine's batch timeout, as a
// Lambda's), and the next invocation resumes it from its checkpoint, as
// the schedule's next trigger would (one that finds the lease still held
// tries again shortly). It returns the first invocation's summary with
// Cursor, Total and Stopped from the last and Enqueued summed over them,
// and how many there were; logf, if set, hears of each.
func fanOutWhole(ctx context.Context, e *exec.Runtime, job string, at time.Time, logf func(string, ...any)) (coordinator.Summary, int, error) {
	var sum coordinator.Summary
	enqueued, shards := 0, 0
	for n := 1; ; n++ {
		s, err := e.Trigger(ctx, job, at, false)
		if err != nil {
			return s, n, fmt.Errorf("invocation %d: %w", n, err)
		}
		enqueued += s.Enqueued
		shards += s.ShardMessages
		if n == 1 {
			sum = s
		}
		sum.Cursor, sum.Total, sum.Stopped, sum.FannedOutAt = s.Cursor, s.Total, s.Stopped, s.FannedOutAt
		sum.Enqueued, sum.ShardMessages = enqueued, shards
		if logf != nil {
			logf("  coordinator invocation %d: %s, cursor %d, %d enqueued, stopped %q", n, s.Outcome, s.Cursor, s.Enqueued, s.Stopped)
		}
		run, err := e.Backend().Ledger.GetRun(ctx, job, sum.Nominal)
		if err != nil {
			return sum, n, fmt.Errorf("invocation %d: read the run: %w", n, err)
		}
		if run.ID != sum.Run {
			return sum, n, fmt.Errorf("invocation %d: the tick's run is %s, not %s", n, run.ID, sum.Run)
		}
		if run.State != ledger.RunFanningOut {
			sum.Cursor = run.Cursor
			return sum, n, nil
		}
		if n == 100 {
			return sum, n, fmt.Errorf("still fanning out after %d invocations (cursor %d)", n, run.Cursor)
		}
		if s.Outcome == coordinator.OutcomeSkipped {
			select { // the lease is still held: as a retried trigger would
			case <-ctx.Done():
				return sum, n, ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}
