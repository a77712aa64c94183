// Package batonclient submits work to a catalog's jobs on demand and reads
// their runs, shaped like the clients and inspectors of River and asynq: a
// Client submits a dedupe key and items with payloads (Submit), reads a
// run's status (Status) and its items' results (Results), waits for a run
// to finish (Wait), and may work the queue itself (Work) as a local
// runtime does.
//
// A submission opens a run of its own, "job+key#generation": the same key
// submitted again within the job's retention (baton.Job.Retention)
// returns that run and opens nothing (Submitted.Deduped says so, and
// Submitted.PayloadDiffers when the items sent differ from the run's,
// which were kept). A caller that submits a key while another is opening
// it waits for that one and gets its run. Its
// items are stored with the run, each payload with its item, and go
// through the same ledger, claims, settling, status and dead-letter queue
// as the items of a tick; the job's Processor gets each payload in
// baton.Task.Payload.
//
// Status, Results and Wait take any run id, a tick's ("job@time#gen") or
// a submission's.
//
// # Operating
//
// The operator's actions of the CLI are methods too, with the same
// guards: Cancel and CancelItem, Pause and Resume, Redrive, Lease and
// ReleaseLease, ReplayItem and ReplayTick (and Replay for a submission).
// Each returns what it did; a refusal is an error matching one of the
// Err values (ErrLeaseLive, ErrLeaseChanged, ErrItemTerminal, ErrItemHeld,
// …), to test with errors.Is. The CLI and the dashboard call the same
// operations.
package batonclient

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/runstatus"

	// The engines a client opens by default; a binary may link more
	// (see package engines).
	_ "github.com/batonhq/baton/internal/backend/awsbackend"
	_ "github.com/batonhq/baton/internal/backend/postgresbackend"
	_ "github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/telemetry"
)

// Options say which engine holds the catalog's runs and how to reach it.
type Options struct {
	// Engine is the engine's name, "sqlite" (the default), "postgres" or
	// "aws", or any other engine the binary links (see package engines);
	// or its URL: sqlite:///path/to.db, postgres://user:pass@host/db,
	// aws://?table=T&queue=URL; or the path of a SQLite file. An unknown
	// name is an error that lists the linked engines.
	Engine string
	// Store is the embedded store's SQLite file (sqlite); "" means
	// var/baton.db.
	Store string
	// DSN is the PostgreSQL database's connection string (postgres); ""
	// takes it from BATON_PG_DSN. 'baton setup --backend postgres' makes
	// its schema and queues.
	DSN string
	// Table and QueueURL are the DynamoDB table and the SQS work queue
	// (aws); "" takes them from BATON_TABLE and BATON_QUEUE_URL. DLQURL,
	// optional, is the dead-letter queue (BATON_DLQ_URL).
	Table, QueueURL, DLQURL string
	// Endpoint, optional, overrides the AWS endpoint of both services (a
	// local emulator); the rest of the AWS configuration comes from the
	// SDK's standard chain (AWS_REGION, credentials, …).
	Endpoint string
	// Owner prefixes the client's lease and claim owners; "" means
	// host/pid.
	Owner   string
	NowFunc func() time.Time // nil: time.Now
	// TracerProvider records a span per submission and per item the
	// client's Work runs (see docs/tracing.md); the submission's messages
	// carry its trace context to whichever consumer runs them. nil: the
	// global provider, a no-op until one is set.
	TracerProvider trace.TracerProvider
	// MeterProvider records the item metrics; nil: the global provider.
	MeterProvider metric.MeterProvider
	// LogHandler receives the client's log records (its consumers' in
	// Work); nil: none.
	LogHandler slog.Handler
}

// Client submits work and reads runs. Its methods may be called
// concurrently. Close it when done.
type Client struct {
	b       backend.Backend
	eng     *exec.Runtime
	nowFunc func() time.Time
}

// Open opens the engine o names for catalog.
func Open(ctx context.Context, catalog *baton.Catalog, o *Options) (*Client, error) {
	if o == nil {
		o = &Options{}
	}
	if catalog == nil {
		return nil, errors.New("batonclient: no catalog")
	}
	name := o.Engine
	if name == "" {
		name = "sqlite"
	}
	b, err := backend.Open(ctx, name, backend.Config{Store: o.Store, DSN: o.DSN, Table: o.Table, QueueURL: o.QueueURL, DLQURL: o.DLQURL,
		DynamoDBEndpoint: o.Endpoint, SQSEndpoint: o.Endpoint, TracerProvider: o.TracerProvider})
	if err != nil {
		return nil, fmt.Errorf("batonclient: %w", err)
	}
	eo := exec.Options{Catalog: catalog, Owner: o.Owner, NowFunc: o.NowFunc,
		Telemetry: telemetry.New(telemetry.Options{TracerProvider: o.TracerProvider, MeterProvider: o.MeterProvider, Engine: b.Name})}
	if o.LogHandler != nil {
		eo.Logger = slog.New(o.LogHandler)
	}
	eng, err := exec.New(b, eo)
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("batonclient: %w", err)
	}
	return &Client{b: b, eng: eng, nowFunc: o.NowFunc}, nil
}

// Close releases the engine's resources.
func (c *Client) Close() error { return c.b.Close() }

// Submitted says what Submit did.
type Submitted struct {
	// Run is the submission's run: the one opened, or the one found.
	Run baton.RunID
	// Deduped is true when the key found a run within the job's
	// retention: nothing was opened or sent.
	Deduped bool
	// PayloadDiffers is set with Deduped when the items submitted differ
	// (names or payloads) from those the key's run was opened with: the
	// new items were not used. False when that is not known (a run opened
	// by a version that kept no digest of its items).
	PayloadDiffers bool
	// Enqueued is the number of messages sent by this call.
	Enqueued int
}

// ErrBusy matches Submit's error when another caller is submitting the
// same key at this very moment: retry.
var ErrBusy = errors.New("the same dedupe key is being submitted by another caller")

// Submit submits items (any order, unique names as baton.ValidName
// defines them, payloads of at most baton.MaxPayload bytes, at most
// 100,000 items) for job under the dedupe key key. A bad submission is
// refused with an error naming what is wrong, and nothing is opened.
func (c *Client) Submit(ctx context.Context, job, key string, items []baton.Item) (Submitted, error) {
	return c.SubmitClass(ctx, job, key, "", items)
}

// SubmitClass is Submit in a priority class: class names a job queue of
// the catalog (baton.JobQueue), whose consumers, at their concurrency
// share, serve the submission's items in place of the job's own queue's
// ("" is the job's queue). An unknown class is refused with an error
// naming the catalog's classes.
func (c *Client) SubmitClass(ctx context.Context, job, key, class string, items []baton.Item) (Submitted, error) {
	sum, err := c.eng.Coordinator.Submit(ctx, coordinator.Submission{Job: job, Key: key, Class: class, Items: items})
	if err != nil {
		return Submitted{Run: sum.Run}, err
	}
	if sum.Outcome == coordinator.OutcomeSkipped && !sum.Deduped {
		return Submitted{}, fmt.Errorf("submit %s+%s: %w", job, key, ErrBusy)
	}
	return Submitted{Run: sum.Run, Deduped: sum.Deduped, PayloadDiffers: sum.PayloadDiffers, Enqueued: sum.Enqueued}, nil
}

// ErrInFlight matches Replay's error for a submission whose latest run
// has not finished yet: wait for it (Wait) first.
var ErrInFlight = coordinator.ErrReplayInFlight

// Replay runs the submission job+key again as its run's next generation,
// with the items and payloads stored with its latest run, which must be
// finished (else an error matching ErrInFlight; a key never submitted,
// or removed after its retention, gives one matching ErrNotFound). The
// dedupe key then finds the new run, which Submitted.Run names. Two
// replays of the key at once replay it once: the one that waited for the
// other answers with its run, Deduped.
func (c *Client) Replay(ctx context.Context, job, key string) (Submitted, error) {
	sum, err := c.eng.Coordinator.ReplaySubmission(ctx, job, key, time.Time{})
	if errors.Is(err, ledger.ErrNotFound) {
		return Submitted{}, fmt.Errorf("replay %s+%s: %w: %w", job, key, ErrNotFound, err)
	}
	if err != nil {
		return Submitted{Run: sum.Run}, err
	}
	if sum.Outcome == coordinator.OutcomeSkipped && !sum.Deduped {
		return Submitted{}, fmt.Errorf("replay %s+%s: %w", job, key, ErrBusy)
	}
	return Submitted{Run: sum.Run, Deduped: sum.Deduped, Enqueued: sum.Enqueued}, nil
}

// RunStatus is a run's state.
type RunStatus struct {
	Run baton.RunID
	// State is fanning_out, fanned_out, complete or partial.
	State string
	// Finished is true once the run is complete (every item SUCCEEDED)
	// or partial (every item ended, some DEAD or CANCELLED).
	Finished bool
	// The run's items per state, counted from their records as 'baton
	// status' and the dashboard count them: Pending are the items not
	// attempted yet (no record, or waiting on a limit before their first
	// attempt), Failed those waiting to be retried.
	Pending, Running, Failed   int
	Succeeded, Dead, Cancelled int
	OpenedAt, FinishedAt       time.Time
}

// ErrNotFound matches the error of Status and Wait for a run that does
// not exist (or was removed after its retention).
var ErrNotFound = errors.New("no such run")

// Status reads the run's record and counts its items (it reads them all:
// to wait for a run, Wait reads its record alone until it finishes).
func (c *Client) Status(ctx context.Context, id baton.RunID) (RunStatus, error) {
	j, err := c.eng.Catalog().Lookup(id.Job)
	if err != nil {
		return RunStatus{}, fmt.Errorf("status %s: %w", id, err)
	}
	d, err := runstatus.ReadRun(ctx, c.b.Ledger, j, id, c.now())
	if errors.Is(err, runstatus.ErrNoRun) {
		return RunStatus{}, fmt.Errorf("status %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return RunStatus{}, fmt.Errorf("status %s: %w", id, err)
	}
	if !d.Current {
		return RunStatus{}, fmt.Errorf("status %s: %w (its latest generation is %s)", id, ErrNotFound, d.SupersededBy)
	}
	var finished time.Time
	if d.FinishedAt != nil {
		finished = *d.FinishedAt
	}
	n := d.Items
	return RunStatus{
		Run: id, State: d.State, Finished: ledger.RunState(d.State).Finished(),
		Pending: n[runstatus.Pending], Running: n[string(ledger.ItemRunning)], Failed: n[string(ledger.ItemFailed)],
		Succeeded: n[string(ledger.ItemSucceeded)], Dead: n[string(ledger.ItemDead)], Cancelled: n[string(ledger.ItemCancelled)],
		OpenedAt: d.OpenedAt, FinishedAt: finished,
	}, nil
}

// finished reports whether run id's record says it finished; an error
// matching ErrNotFound when there is no such run.
func (c *Client) finished(ctx context.Context, id baton.RunID) (bool, error) {
	run, err := ledger.GetRunOf(ctx, c.b.Ledger, id)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return false, fmt.Errorf("status %s: %w", id, ErrNotFound)
	case err != nil:
		return false, fmt.Errorf("status %s: %w", id, err)
	case run.ID.Generation != id.Generation:
		return false, fmt.Errorf("status %s: %w (its latest generation is %s)", id, ErrNotFound, run.ID)
	}
	return run.State.Finished(), nil
}

func (c *Client) now() time.Time {
	if c.nowFunc != nil {
		return c.nowFunc().UTC()
	}
	return time.Now().UTC()
}

// Wait polls the run every interval (0: 200ms) until it is finished, and
// returns its status; it returns ctx's error when ctx ends first.
func (c *Client) Wait(ctx context.Context, id baton.RunID, every time.Duration) (RunStatus, error) {
	if every <= 0 {
		every = 200 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		done, err := c.finished(ctx, id)
		switch {
		case ctx.Err() != nil:
		case err != nil && !errors.Is(err, ErrNotFound):
			return RunStatus{}, err
		case err == nil && done:
			return c.Status(ctx, id)
		}
		select {
		case <-ctx.Done():
			st, _ := c.Status(context.WithoutCancel(ctx), id) // how far it got, its counts included
			return st, fmt.Errorf("wait %s: %w", id, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// ItemResult is one item of a run as the ledger holds it.
type ItemResult = baton.ItemResult

// Results yields the run's items in name order, a page at a time (memory
// flat in the run's size): for a run with a stored list (a submission, a
// job with baton.Job.Items) every item of the list, started or not; for
// a tick of constant assets, the items that started. It stops at the
// first error, which it yields; a run that does not exist yields an error
// matching baton.ErrNoRun.
func (c *Client) Results(ctx context.Context, id baton.RunID) iter.Seq2[ItemResult, error] {
	return func(yield func(ItemResult, error) bool) {
		j, err := c.eng.Catalog().Lookup(id.Job)
		if err != nil {
			yield(ItemResult{}, err)
			return
		}
		for r, err := range ledger.Results(ctx, c.b.Ledger, id, id.Submitted() || jobspec.RunTime(j)) {
			if !yield(r, err) || err != nil {
				return
			}
		}
	}
}

// Work processes the work queue with the catalog's processors until ctx
// ends, as a local runtime's consumers do: for tests, examples and a
// process that both submits and works.
func (c *Client) Work(ctx context.Context) error {
	err := c.eng.Consume(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
