package lambdaapp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/lambdaapp"
	"github.com/batonhq/baton/internal/lambdaevent"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

func newBackend(t *testing.T) backend.Backend {
	t.Helper()
	b, err := sqlitebackend.Open(context.Background(), filepath.Join(t.TempDir(), "baton.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func params(b backend.Backend, now func() time.Time) lambdaapp.HandlerParams {
	return lambdaapp.HandlerParams{
		Jobs:   fx.Catalog(nil),
		Leases: b.Leases, Ledger: b.Ledger, Effects: b.Effects, Queue: b.Work, DeadLetter: b.DeadLetter, MaxReceives: b.MaxReceives,
		FunctionName: "baton-test", NowFunc: now,
	}
}

func TestNewHandlerRejectsIncompleteParams(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	now := func() time.Time { return fixedAt }
	cases := []struct {
		name       string
		mutateFunc func(*lambdaapp.HandlerParams)
		want       string
	}{
		{"no catalog", func(p *lambdaapp.HandlerParams) { p.Jobs = nil }, "missing [Jobs]"},
		{"no ledger", func(p *lambdaapp.HandlerParams) { p.Ledger = nil }, "missing [Ledger]"},
		{"no queue", func(p *lambdaapp.HandlerParams) { p.Queue = nil }, "missing [Queue]"},
		{"no leases", func(p *lambdaapp.HandlerParams) { p.Leases = nil }, "missing [Leases]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := params(b, now)
			tc.mutateFunc(&p)
			_, err := lambdaapp.NewCoordinatorHandler(p)
			require.ErrorContains(t, err, tc.want)
		})
	}
	// The consumer needs no lease store.
	p := params(b, now)
	p.Leases = nil
	_, err := lambdaapp.NewConsumerHandler(p)
	require.NoError(t, err)
	// …but an effect store, which the coordinator does not need.
	p.Effects = nil
	_, err = lambdaapp.NewConsumerHandler(p)
	require.ErrorContains(t, err, "missing [Effects]")
	p.Leases = b.Leases
	_, err = lambdaapp.NewCoordinatorHandler(p)
	require.NoError(t, err)
}

func TestCoordinatorLeaseContention(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	var metrics bytes.Buffer
	p := params(b, func() time.Time { return fixedAt })
	p.Metrics = &metrics
	h, err := lambdaapp.NewCoordinatorHandler(p)
	require.NoError(t, err)

	// The tick is already fanned out: a trigger behind the lease is a
	// duplicate, skipped without error.
	_, err = invoke[lambdaapp.CoordinatorResponse](t, lambda.NewHandler(h.Handle), fixture(t, "coordinator-scheduler.json"))
	require.NoError(t, err)
	metrics.Reset()
	held, err := b.Leases.Acquire(context.Background(), lease.AcquireParams{
		Job: "fx", Owner: "baton-test/other-request", TTL: time.Minute, Now: fixedAt,
	})
	require.NoError(t, err)

	resp, err := invoke[lambdaapp.CoordinatorResponse](t, lambda.NewHandler(h.Handle), fixture(t, "coordinator-scheduler.json"))
	require.NoError(t, err, "contention on a fanned-out tick is not an error")
	require.Equal(t, "skipped", resp.Outcome)
	require.Empty(t, resp.Run)
	require.Zero(t, resp.Enqueued)
	require.Equal(t, &lambdaapp.Holder{Owner: held.Owner, ExpiresAt: held.ExpiresAt, Fence: held.Fence}, resp.Holder)

	var rec map[string]any
	require.NoError(t, json.Unmarshal(metrics.Bytes(), &rec))
	require.EqualValues(t, 1, rec["LeaseContention"])
	require.EqualValues(t, 0, rec["ItemsEnqueued"])
	require.Equal(t, "skipped", rec["outcome"])
}

// A tick that has not run yet must not be dropped because the lease is busy
// with another tick: the handler fails so that the trigger is retried.
func TestCoordinatorLeaseContentionOnPendingTickIsRetried(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	_, err := b.Leases.Acquire(context.Background(), lease.AcquireParams{
		Job: "fx", Owner: "baton-test/other-request", TTL: time.Minute, Now: fixedAt,
	})
	require.NoError(t, err)
	h, err := lambdaapp.NewCoordinatorHandler(params(b, func() time.Time { return fixedAt }))
	require.NoError(t, err)
	_, err = invoke[lambdaapp.CoordinatorResponse](t, lambda.NewHandler(h.Handle), fixture(t, "coordinator-scheduler.json"))
	require.Error(t, err)
	require.Contains(t, err.Error(), "not run yet: lease held by baton-test/other-request")
}

func TestCoordinatorRejectsBadTriggers(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	h, err := lambdaapp.NewCoordinatorHandler(params(b, func() time.Time { return fixedAt }))
	require.NoError(t, err)
	for _, payload := range []string{
		`{"key1":"value1"}`,
		`{"job":"equities","scheduledTime":"2026-11-21T12:01:00Z"}`,
		`{"job":"fx","scheduledTime":"2026-11-21T13:00:00Z"}`, // an hour ahead of the clock
		`[]`,
	} {
		_, err := h.Handle(context.Background(), json.RawMessage(payload))
		require.ErrorIs(t, err, lambdaevent.ErrBadTrigger, payload)
	}
	runs, err := b.Ledger.ListRuns(context.Background(), ledger.ListRunsParams{Job: "fx"})
	require.NoError(t, err)
	require.Empty(t, runs, "no run opened")
}

// A trigger naming a job without a schedule (on demand, or chained) is
// refused at decoding, naming the job: a schedule left over in a stack
// must not tick it without a parent. Nothing is opened or leased.
func TestCoordinatorRefusesATriggerOfAJobWithoutSchedule(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	p := params(b, func() time.Time { return fixedAt })
	reindex := baton.Job{Name: "reindex", Assets: []string{"all"},
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })}
	p.Jobs = baton.MustCatalog(fx.Job(nil), reindex)
	h, err := lambdaapp.NewCoordinatorHandler(p)
	require.NoError(t, err)
	for _, payload := range []string{
		`{"job":"reindex","scheduledTime":"2026-11-21T12:01:00Z"}`,
		`{"job":"reindex","scheduledTime":"2026-11-21T12:01:00Z","force":true}`,
		`{"job":"reindex"}`,
	} {
		_, err = h.Handle(context.Background(), json.RawMessage(payload))
		require.ErrorIs(t, err, lambdaevent.ErrBadTrigger, payload)
		require.ErrorContains(t, err, "job reindex has no schedule: it runs on demand (submit) or by a chain", payload)
	}
	runs, err := b.Ledger.ListRuns(context.Background(), ledger.ListRunsParams{Job: "reindex"})
	require.NoError(t, err)
	require.Empty(t, runs, "no run opened")
	_, err = b.Leases.Inspect(context.Background(), "reindex")
	require.ErrorIs(t, err, lease.ErrNotFound, "no lease taken")
	// A submission to it is what runs it.
	resp, err := h.Handle(context.Background(), json.RawMessage(`{"submit":{"v":1,"job":"reindex","key":"k1","items":[{"name":"a"}]}}`))
	require.NoError(t, err)
	require.Equal(t, "reindex+k1#1", resp.Run)
}

func TestCoordinatorOwnerIsFunctionAndRequest(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	h, err := lambdaapp.NewCoordinatorHandler(params(b, func() time.Time { return fixedAt }))
	require.NoError(t, err)
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-42"})
	resp, err := h.Handle(ctx, fixture(t, "coordinator-scheduler.json"))
	require.NoError(t, err)
	require.Equal(t, "req-42", resp.RequestID)
	item, err := b.Leases.Inspect(context.Background(), "fx")
	require.NoError(t, err)
	require.Empty(t, item.Owner, "released after the run")
	require.Equal(t, resp.Fence, item.Fence)
	// The claims of the consumer carry the owner too.
	ch, err := lambdaapp.NewConsumerHandler(params(b, func() time.Time { return fixedAt }))
	require.NoError(t, err)
	ctx = lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-43"})
	var ev events.SQSEvent
	require.NoError(t, json.Unmarshal(fixture(t, "consumer-batch.json"), &ev))
	_, err = ch.Handle(ctx, ev)
	require.NoError(t, err)
	it, err := b.Ledger.GetItem(context.Background(), ledger.ItemKey{Run: ledger.RunID{Job: "fx", Nominal: tick, Generation: 1}, Asset: "EURUSD"})
	require.NoError(t, err)
	require.Equal(t, "baton-test/req-43", it.Owner)
}

func TestCoordinatorNoTimeLeft(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	h, err := lambdaapp.NewCoordinatorHandler(params(b, func() time.Time { return fixedAt }))
	require.NoError(t, err)
	// Less time left than the job's deadline margin.
	margin := fx.Job(nil).Limits.DeadlineMargin
	ctx, cancel := context.WithTimeout(context.Background(), margin/2)
	defer cancel()
	_, err = h.Handle(ctx, fixture(t, "coordinator-scheduler.json"))
	require.ErrorIs(t, err, coordinator.ErrNoTime)
}

// steppingClock advances by step at every reading.
type steppingClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

func (c *steppingClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	return c.t
}

func TestCoordinatorIncompleteFanOutIsAnErrorAndResumes(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	// A fan-out budget already spent when the fan-out starts: the clock
	// moves at every reading.
	clock := &steppingClock{t: fixedAt, step: time.Millisecond}
	p := params(b, clock.now)
	j, _ := p.Jobs.Lookup(fx.Name)
	j.Limits.FanOutBudget = time.Nanosecond
	p.Jobs = baton.MustCatalog(j)
	h, err := lambdaapp.NewCoordinatorHandler(p)
	require.NoError(t, err)
	_, err = h.Handle(context.Background(), fixture(t, "coordinator-scheduler.json"))
	require.ErrorIs(t, err, lambdaapp.ErrIncomplete)
	require.ErrorContains(t, err, "stopped (budget) at 0 of 7 assets; a retry resumes it")
	run, err := b.Ledger.GetRun(context.Background(), "fx", tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunFanningOut, run.State)

	// The retry (Lambda's asynchronous retry sends the same event) resumes.
	h2, err := lambdaapp.NewCoordinatorHandler(params(b, func() time.Time { return fixedAt.Add(time.Second) }))
	require.NoError(t, err)
	resp, err := h2.Handle(context.Background(), fixture(t, "coordinator-scheduler.json"))
	require.NoError(t, err)
	require.Equal(t, "resumed", resp.Outcome)
	require.Equal(t, 7, resp.Enqueued)
	require.Equal(t, 7, resp.Cursor)
}

func TestConsumerReportsUntranslatableRecords(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	openTick(t, b)
	var metrics bytes.Buffer
	p := params(b, func() time.Time { return fixedAt })
	p.Metrics = &metrics
	h, err := lambdaapp.NewConsumerHandler(p)
	require.NoError(t, err)
	ev := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "ok", Body: `{"v":1,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1}`},
		{MessageId: "bad-count", Body: `{"v":1,"key":"fx@2026-11-21T12:01:00Z#1/GBPUSD","fence":1}`,
			Attributes: map[string]string{"ApproximateReceiveCount": "-3"}},
	}}
	resp, err := h.Handle(context.Background(), ev)
	require.NoError(t, err)
	require.Equal(t, []string{"bad-count"}, failedIDs(resp))
	// One record per job; an untranslated record's job is not known.
	byJob := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(metrics.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if _, cold := rec["ColdStart"]; cold {
			continue
		}
		byJob[rec["Job"].(string)] = rec
	}
	require.Len(t, byJob, 2)
	require.EqualValues(t, 1, byJob["fx"]["ItemsSucceeded"])
	require.EqualValues(t, 0, byJob["fx"]["ItemsFailed"])
	require.EqualValues(t, 1, byJob["unknown"]["ItemsFailed"])
	require.True(t, strings.Contains(metrics.String(), `"Namespace":"Baton"`))
}

func TestConsumerMetricsSplitPerEMFLimit(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	for i := range 15 { // the runs the coordinator would have opened
		nominal := tick.Add(time.Duration(i) * time.Minute)
		run, _, err := b.Ledger.OpenRun(context.Background(), ledger.OpenRunParams{Job: fx.Name, Nominal: nominal, Fence: 1, Now: nominal})
		require.NoError(t, err)
		_, err = b.Ledger.AdvanceRun(context.Background(), ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: len(fx.Assets), Done: true, Now: nominal})
		require.NoError(t, err)
	}
	var metrics bytes.Buffer
	p := params(b, func() time.Time { return fixedAt.Add(time.Hour) })
	p.Metrics = &metrics
	h, err := lambdaapp.NewConsumerHandler(p)
	require.NoError(t, err)
	// 15 ticks × 7 assets: more successes than one EMF metric may carry.
	var ev events.SQSEvent
	for i := range 15 {
		run := ledger.RunID{Job: "fx", Nominal: tick.Add(time.Duration(i) * time.Minute), Generation: 1}
		for _, a := range fx.Assets {
			m := message.New(ledger.ItemKey{Run: run, Asset: a}, 1, false)
			ev.Records = append(ev.Records, events.SQSMessage{MessageId: m.Key, Body: string(m.Encode())})
		}
	}
	resp, err := h.Handle(context.Background(), ev)
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)

	lines := strings.Split(strings.TrimSpace(metrics.String()), "\n")
	require.Contains(t, lines[0], `"ColdStart":1`) // the handler's first invocation
	lines = lines[1:]
	require.Len(t, lines, 2)
	var first, second map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &second))
	require.EqualValues(t, 105, first["ItemsSucceeded"])
	require.Len(t, first["TickToDone"], 100)
	require.Len(t, second["TickToDone"], 5)
	require.NotContains(t, second, "ItemsSucceeded", "counts are written once")
}

// One deployment serves every job of its catalog: each trigger names its
// job; a rule event without one is refused when there are several; the
// consumer processes the messages of every job and reports metrics per
// job.
func TestSeveralJobsPerDeployment(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	var metrics bytes.Buffer
	p := params(b, func() time.Time { return fixedAt })
	p.Metrics = &metrics
	equities := baton.Job{Name: "equities", Schedule: "rate(5 minutes)", Assets: []string{"AAPL", "MSFT"},
		Processor: baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
			return []byte(t.Asset), t.Effects.Put(ctx, "quote/"+t.Asset, []byte("1"))
		})}
	p.Jobs = baton.MustCatalog(fx.Job(nil), equities)
	coord, err := lambdaapp.NewCoordinatorHandler(p)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	resp, err := coord.Handle(ctx, []byte(`{"job":"equities","scheduledTime":"2026-11-21T12:00:00Z"}`))
	require.NoError(t, err)
	require.Equal(t, "opened", resp.Outcome)
	require.Equal(t, "equities@2026-11-21T12:00:00Z#1", resp.Run)
	require.Equal(t, 2, resp.Enqueued)
	resp, err = coord.Handle(ctx, []byte(`{"job":"fx","scheduledTime":"2026-11-21T12:01:00Z"}`))
	require.NoError(t, err)
	require.Equal(t, "fx@2026-11-21T12:01:00Z#1", resp.Run)

	_, err = coord.Handle(ctx, fixture(t, "coordinator-scheduled.json")) // a rule event naming no job
	require.ErrorContains(t, err, "rule event: it names no job and the catalog has 2 (equities, fx)")
	_, err = coord.Handle(ctx, []byte(`{"job":"bonds","scheduledTime":"2026-11-21T12:01:00Z"}`))
	require.ErrorContains(t, err, `job "bonds" is not in this deployment's catalog (jobs: equities, fx)`)

	cons, err := lambdaapp.NewConsumerHandler(p)
	require.NoError(t, err)
	var records []events.SQSMessage
	for range 3 {
		ds, err := b.Work.Receive(ctx, queue.ReceiveParams{Max: 10, Visibility: time.Minute, Now: time.Now()})
		require.NoError(t, err)
		for _, d := range ds {
			records = append(records, events.SQSMessage{MessageId: d.MessageID, Body: string(d.Body), Attributes: map[string]string{"ApproximateReceiveCount": "1"}})
		}
	}
	require.Len(t, records, 2+len(fx.Assets))
	out, err := cons.Handle(ctx, events.SQSEvent{Records: records})
	require.NoError(t, err)
	require.Empty(t, failedIDs(out))
	for _, job := range []string{"equities", "fx"} {
		require.Contains(t, metrics.String(), `"Job":"`+job+`"`)
	}
	items, err := b.Ledger.ListItems(ctx, baton.RunID{Job: "equities", Nominal: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), Generation: 1})
	require.NoError(t, err)
	require.Len(t, items, 2)
	for _, it := range items {
		require.Equal(t, ledger.ItemSucceeded, it.State, it.Key.String())
	}
}

// RunsOpened is 1 on the trigger that opens the tick's run and 0 on every
// other outcome, so that the stack's alarm sees ticks stop.
func TestCoordinatorRunsOpenedMetric(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	var metrics bytes.Buffer
	p := params(b, func() time.Time { return fixedAt })
	p.Metrics = &metrics
	h, err := lambdaapp.NewCoordinatorHandler(p)
	require.NoError(t, err)
	record := func() map[string]any { // the job's record (the first invocation also writes ColdStart)
		t.Helper()
		defer metrics.Reset()
		for line := range strings.Lines(metrics.String()) {
			var rec map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &rec))
			if _, ok := rec["Job"]; ok {
				return rec
			}
		}
		t.Fatalf("no job record in %s", metrics.String())
		return nil
	}

	resp, err := h.Handle(context.Background(), fixture(t, "coordinator-scheduler.json"))
	require.NoError(t, err)
	require.Equal(t, "opened", resp.Outcome)
	rec := record()
	require.EqualValues(t, 1, rec["RunsOpened"])
	require.Equal(t, "fx", rec["Job"])
	require.Contains(t, metricNames(t, rec), "RunsOpened")

	resp, err = h.Handle(context.Background(), fixture(t, "coordinator-scheduler.json"))
	require.NoError(t, err)
	require.Equal(t, "already_fanned_out", resp.Outcome)
	require.EqualValues(t, 0, record()["RunsOpened"])

	_, err = b.Leases.Acquire(context.Background(), lease.AcquireParams{
		Job: "fx", Owner: "baton-test/other-request", TTL: time.Minute, Now: fixedAt,
	})
	require.NoError(t, err)
	resp, err = h.Handle(context.Background(), fixture(t, "coordinator-scheduler.json"))
	require.NoError(t, err)
	require.Equal(t, "skipped", resp.Outcome)
	require.EqualValues(t, 0, record()["RunsOpened"])
}

// metricNames are the metrics an EMF record declares (not its properties).
func metricNames(t *testing.T, rec map[string]any) []string {
	t.Helper()
	var aws struct {
		CloudWatchMetrics []struct {
			Metrics []struct{ Name string }
		}
	}
	raw, err := json.Marshal(rec["_aws"])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &aws))
	var names []string
	for _, d := range aws.CloudWatchMetrics {
		for _, m := range d.Metrics {
			names = append(names, m.Name)
		}
	}
	return names
}
