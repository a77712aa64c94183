package lambdaapp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/lambdaapp"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// The fixtures' tick and a clock a few seconds after it.
var (
	tick    = time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	fixedAt = tick.Add(5 * time.Second)
)

// covered lists the fixtures the tests below invoke; TestEveryFixtureCovered
// fails when events/ holds another.
var covered = []string{
	"coordinator-scheduled.json",
	"coordinator-scheduler.json",
	"coordinator-replay.json",
	"coordinator-replay-force.json",
	"consumer-batch.json",
	"consumer-batch-malformed.json",
	"consumer-batch-duplicates.json",
	"coordinator-submit.json",
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	require.NoError(t, err)
	require.True(t, json.Valid(b), "%s is not valid JSON", name)
	return b
}

func TestEveryFixtureCovered(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "..", "events", "*.json"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	require.ElementsMatch(t, covered, names)
}

// testBundle is one embedded backend with both handlers on it.
type testBundle struct {
	backend     backend.Backend
	coordinator lambda.Handler
	consumer    lambda.Handler
	metrics     *bytes.Buffer
	logs        *bytes.Buffer
}

type setupOpts struct {
	noDeadLetter bool
}

func setup(t *testing.T, o setupOpts) *testBundle {
	t.Helper()
	ctx := context.Background()
	b, err := sqlitebackend.Open(ctx, filepath.Join(t.TempDir(), "baton.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	tb := &testBundle{backend: b, metrics: &bytes.Buffer{}, logs: &bytes.Buffer{}}
	now := func() time.Time { return fixedAt }
	p := lambdaapp.HandlerParams{
		Jobs:         fx.Catalog(nil),
		Leases:       b.Leases,
		Ledger:       b.Ledger,
		Effects:      b.Effects,
		Queue:        b.Work,
		DeadLetter:   b.DeadLetter,
		MaxReceives:  b.MaxReceives,
		FunctionName: "baton-test",
		Logger:       lambdaapp.NewLogger(tb.logs, slog.LevelDebug),
		Metrics:      tb.metrics,
		NowFunc:      now,
	}
	if o.noDeadLetter {
		p.DeadLetter, p.MaxReceives = nil, 0
	}
	coord, err := lambdaapp.NewCoordinatorHandler(p)
	require.NoError(t, err)
	cons, err := lambdaapp.NewConsumerHandler(p)
	require.NoError(t, err)
	tb.coordinator = lambda.NewHandler(coord.Handle)
	tb.consumer = lambda.NewHandler(cons.Handle)
	return tb
}

// invoke runs h on payload through the handler's JSON path with a
// deadline, as the Lambda runtime would.
func invoke[T any](t *testing.T, h lambda.Handler, payload []byte) (T, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out T
	b, err := h.Invoke(ctx, payload)
	if err != nil {
		return out, err
	}
	require.NoError(t, json.Unmarshal(b, &out), "%s", b)
	return out, nil
}

// drain receives every visible message of q.
func drain(t *testing.T, q queue.Receiver) []queue.Delivery {
	t.Helper()
	var all []queue.Delivery
	for {
		ds, err := q.Receive(context.Background(), queue.ReceiveParams{Max: queue.MaxBatch, Visibility: time.Hour})
		require.NoError(t, err)
		if len(ds) == 0 {
			return all
		}
		all = append(all, ds...)
	}
}

func keysOf(t *testing.T, ds []queue.Delivery) []string {
	t.Helper()
	var keys []string
	for _, d := range ds {
		m, err := message.Decode(d.Body)
		require.NoError(t, err)
		keys = append(keys, m.Key)
	}
	slices.Sort(keys)
	return keys
}

func runKeys(gen int, assets ...string) []string {
	var keys []string
	for _, a := range assets {
		keys = append(keys, ledger.ItemKey{Run: ledger.RunID{Job: "fx", Nominal: tick, Generation: gen}, Asset: a}.String())
	}
	slices.Sort(keys)
	return keys
}

func TestCoordinatorFixtures(t *testing.T) {
	t.Parallel()
	tb := setup(t, setupOpts{})
	steps := []struct {
		file     string
		source   string
		outcome  string
		run      string
		enqueued int
	}{
		{"coordinator-scheduled.json", "rule", "opened", "fx@2026-11-21T12:01:00Z#1", 7},
		{"coordinator-scheduler.json", "scheduler", "already_fanned_out", "fx@2026-11-21T12:01:00Z#1", 0},
		{"coordinator-replay.json", "replay", "already_fanned_out", "fx@2026-11-21T12:01:00Z#1", 0},
		{"coordinator-replay-force.json", "replay", "opened", "fx@2026-11-21T12:01:00Z#2", 7},
	}
	for _, s := range steps {
		resp, err := invoke[lambdaapp.CoordinatorResponse](t, tb.coordinator, fixture(t, s.file))
		require.NoError(t, err, s.file)
		require.Equal(t, s.source, resp.Source, s.file)
		require.Equal(t, s.outcome, resp.Outcome, s.file)
		require.Equal(t, s.run, resp.Run, s.file)
		require.Equal(t, s.enqueued, resp.Enqueued, s.file)
		require.Equal(t, tick, resp.Nominal, s.file)
		require.Equal(t, 7, resp.Total, s.file)
		require.Equal(t, 7, resp.Cursor, s.file)
		require.True(t, strings.HasPrefix(resp.RequestID, "local-"), resp.RequestID)
	}
	// Generations 1 and 2, one message per asset each.
	want := append(runKeys(1, fx.Assets...), runKeys(2, fx.Assets...)...)
	slices.Sort(want)
	require.Equal(t, want, keysOf(t, drain(t, tb.backend.Work)))

	// Every invocation wrote one EMF line with the job dimension, the
	// first one a ColdStart line before it.
	lines := strings.Split(strings.TrimSpace(tb.metrics.String()), "\n")
	require.Contains(t, lines[0], `"ColdStart":1`)
	lines = lines[1:]
	require.Len(t, lines, len(steps))
	for _, l := range lines {
		require.NotContains(t, l, "ColdStart", "a warm invocation")
	}
	var first map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	require.Equal(t, "fx", first["Job"])
	require.EqualValues(t, 7, first["ItemsEnqueued"])
	require.EqualValues(t, 0, first["LeaseContention"])
	require.Contains(t, first, "_aws")
	// Logs are JSON lines naming the function, request id and phase.
	for _, l := range strings.Split(strings.TrimSpace(tb.logs.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec), l)
		require.Equal(t, "baton-test", rec["function_name"], l)
		require.NotEmpty(t, rec["function_request_id"], l)
	}
	require.Contains(t, tb.logs.String(), `"phase":"acquire"`)
}

func TestCoordinatorFixturesAlone(t *testing.T) {
	t.Parallel()
	// On a fresh store every trigger shape opens generation 1.
	for _, f := range covered[:4] {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			tb := setup(t, setupOpts{})
			resp, err := invoke[lambdaapp.CoordinatorResponse](t, tb.coordinator, fixture(t, f))
			require.NoError(t, err)
			require.Equal(t, "opened", resp.Outcome)
			require.Equal(t, "fx@2026-11-21T12:01:00Z#1", resp.Run)
			require.Equal(t, runKeys(1, fx.Assets...), keysOf(t, drain(t, tb.backend.Work)))
		})
	}
}

func items(t *testing.T, tb *testBundle, gen int) map[string]ledger.Item {
	t.Helper()
	its, err := tb.backend.Ledger.ListItems(context.Background(), ledger.RunID{Job: "fx", Nominal: tick, Generation: gen})
	require.NoError(t, err)
	out := map[string]ledger.Item{}
	for _, it := range its {
		out[it.Key.Asset] = it
	}
	return out
}

func failedIDs(r events.SQSEventResponse) []string {
	var ids []string
	for _, f := range r.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func TestConsumerFixtures(t *testing.T) {
	t.Parallel()
	tb := setup(t, setupOpts{})
	openTick(t, tb.backend)

	resp, err := invoke[events.SQSEventResponse](t, tb.consumer, fixture(t, "consumer-batch.json"))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	its := items(t, tb, 1)
	for _, a := range fx.Assets {
		require.Equal(t, ledger.ItemSucceeded, its[a].State, a)
		require.Equal(t, 1, its[a].Attempt, a)
		require.Equal(t, int64(1), its[a].Fence, a)
		require.True(t, strings.HasPrefix(its[a].Owner, "baton-test/local-"), its[a].Owner)
	}
	// The six inputs of DXY succeeded: the derived item was enqueued (by
	// each input that saw the six succeeded: inputs completing together may
	// both enqueue it; the enqueue is idempotent, not unique).
	require.Equal(t, runKeys(1, fx.DXY), slices.Compact(keysOf(t, drain(t, tb.backend.Work))))

	// Redeliveries and duplicate sends are acknowledged without effect.
	resp, err = invoke[events.SQSEventResponse](t, tb.consumer, fixture(t, "consumer-batch-duplicates.json"))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Equal(t, its, items(t, tb, 1), "nothing changed")
	require.Contains(t, tb.logs.String(), `"status":"duplicate"`)

	// Metrics: one record per batch.
	var recs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(tb.metrics.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		if _, cold := m["ColdStart"]; !cold {
			recs = append(recs, m)
		}
	}
	require.Len(t, recs, 2)
	require.EqualValues(t, 7, recs[0]["ItemsSucceeded"])
	require.EqualValues(t, 0, recs[0]["ItemsFailed"])
	require.Len(t, recs[0]["TickToDone"], 7)
	require.EqualValues(t, 0, recs[1]["ItemsSucceeded"])
	require.EqualValues(t, 4, recs[1]["ItemsDuplicate"])
}

func TestConsumerDuplicatesAlone(t *testing.T) {
	t.Parallel()
	tb := setup(t, setupOpts{})
	openTick(t, tb.backend)
	payload := fixture(t, "consumer-batch-duplicates.json")
	var ev events.SQSEvent
	require.NoError(t, json.Unmarshal(payload, &ev))

	resp, err := invoke[events.SQSEventResponse](t, tb.consumer, payload)
	require.NoError(t, err)
	// Two messages carry EURUSD in one batch: one processes it, the other
	// finds it held (retried) or already done (acknowledged).
	var eur []string
	for _, r := range ev.Records {
		if strings.HasSuffix(r.Body, `/EURUSD","fence":1}`) {
			eur = append(eur, r.MessageId)
		}
	}
	require.Len(t, eur, 2)
	require.LessOrEqual(t, len(resp.BatchItemFailures), 1)
	for _, id := range failedIDs(resp) {
		require.Contains(t, eur, id)
	}
	its := items(t, tb, 1)
	for _, a := range []string{"EURUSD", "GBPUSD", "USDJPY"} {
		require.Equal(t, ledger.ItemSucceeded, its[a].State, a)
		require.Equal(t, 1, its[a].Attempt, a, "processed once")
	}
}

func TestConsumerMalformedFixture(t *testing.T) {
	t.Parallel()
	payload := fixture(t, "consumer-batch-malformed.json")
	var ev events.SQSEvent
	require.NoError(t, json.Unmarshal(payload, &ev))
	const badAttributes = "2b3c4d5e-0000-4000-8000-00000000000a" // its receive count does not parse

	t.Run("dead-lettered with their reason", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, setupOpts{})
		resp, err := invoke[events.SQSEventResponse](t, tb.consumer, payload)
		require.NoError(t, err)
		require.Equal(t, []string{badAttributes}, failedIDs(resp))
		dead := drain(t, tb.backend.DeadLetter)
		require.Len(t, dead, len(ev.Records)-1)
		for _, d := range dead {
			require.NotEmpty(t, d.Attributes[message.AttrError], "dead letter %s has no reason", d.MessageID)
		}
		require.Empty(t, drain(t, tb.backend.Work))
		require.Empty(t, items(t, tb, 1), "no item claimed")
	})
	t.Run("without a dead-letter queue all are retried", func(t *testing.T) {
		t.Parallel()
		tb := setup(t, setupOpts{noDeadLetter: true})
		resp, err := invoke[events.SQSEventResponse](t, tb.consumer, payload)
		require.NoError(t, err)
		var all []string
		for _, r := range ev.Records {
			all = append(all, r.MessageId)
		}
		require.ElementsMatch(t, all, failedIDs(resp))
	})
}

// openTick opens and fans out the fixtures' run (fx, tick, generation 1,
// fence 1), as a coordinator would have, so that the ledger vouches for
// the consumer fixtures' messages.
func openTick(t *testing.T, b backend.Backend) {
	t.Helper()
	ctx := context.Background()
	run, _, err := b.Ledger.OpenRun(ctx, ledger.OpenRunParams{Job: fx.Name, Nominal: tick, Fence: 1, Now: tick})
	require.NoError(t, err)
	_, err = b.Ledger.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: len(fx.Assets), Done: true, Now: tick})
	require.NoError(t, err)
}

// The submission fixture opens the run fx+desk-request-42#1 with its
// three items (their payloads stored with the run, never in a message or
// a log); the same event again is deduped; a bad one is refused naming
// what is wrong.
func TestCoordinatorSubmitFixture(t *testing.T) {
	t.Parallel()
	tb := setup(t, setupOpts{})
	resp, err := invoke[lambdaapp.CoordinatorResponse](t, tb.coordinator, fixture(t, "coordinator-submit.json"))
	require.NoError(t, err)
	require.Equal(t, "submission", resp.Source)
	require.Equal(t, "opened", resp.Outcome)
	require.Equal(t, "fx+desk-request-42#1", resp.Run)
	require.Equal(t, 3, resp.Enqueued)
	require.False(t, resp.Deduped)
	want := []string{"fx+desk-request-42#1/EURUSD", "fx+desk-request-42#1/GBPUSD", "fx+desk-request-42#1/USDJPY"}
	ds := drain(t, tb.backend.Work)
	require.Equal(t, want, keysOf(t, ds))
	for _, d := range ds {
		require.NotContains(t, string(d.Body), "depth", "a payload never travels in a message")
	}
	id, err := ledger.ParseRunID(resp.Run)
	require.NoError(t, err)
	pg, err := tb.backend.Ledger.GetPage(context.Background(), id, 0)
	require.NoError(t, err)
	require.Equal(t, []ledger.PageItem{
		{Name: "EURUSD", Payload: []byte(`{"depth":5,"source":"desk"}`)},
		{Name: "GBPUSD"},
		{Name: "USDJPY", Payload: []byte{0, 1, 2, 3}},
	}, pg.Items)

	again, err := invoke[lambdaapp.CoordinatorResponse](t, tb.coordinator, fixture(t, "coordinator-submit.json"))
	require.NoError(t, err)
	require.True(t, again.Deduped)
	require.Equal(t, resp.Run, again.Run)
	require.Zero(t, again.Enqueued)
	require.Empty(t, drain(t, tb.backend.Work))

	_, err = invoke[lambdaapp.CoordinatorResponse](t, tb.coordinator, []byte(`{"submit":{"v":1,"job":"fx","key":"k","items":[{"name":"a b","payload":"secret"}]}}`))
	require.ErrorContains(t, err, `item 0: invalid item name "a b"`)
	_, err = invoke[lambdaapp.CoordinatorResponse](t, tb.coordinator, []byte(`{"submit":{"v":1,"job":"fx","key":"k","class":"vip","items":[{"name":"a","payload":"secret"}]}}`))
	require.ErrorContains(t, err, `class "vip" is not a job queue of the catalog`, "a class the stack has no queue for")
	require.NotContains(t, tb.logs.String(), "secret")
	require.NotContains(t, tb.logs.String(), "depth")
}
