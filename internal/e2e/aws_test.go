package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/awssqs"
	"github.com/batonhq/baton/internal/backend/awsbackend"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/lambdaapp"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/localaws"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/poller"
	"github.com/batonhq/baton/internal/queue"
)

func TestMain(m *testing.M) {
	code := m.Run()
	localaws.Stop()
	os.Exit(code)
}

// The tick of events/coordinator-scheduled.json.
var tick = time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)

var seq atomic.Int64

func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e9, seq.Add(1))
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	require.NoError(t, err)
	return b
}

// lockedBuffer collects the handlers' logs and metrics, written
// concurrently.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// deployment is one stack on the emulators: a table, a work queue with its
// dead-letter queue, and both functions configured from the environment
// that `baton setup` prints, wired as at cold start (lambdaapp.ParamsOnAWS).
type deployment struct {
	clients     awsbackend.Clients
	res         awsbackend.Resources
	work, dlq   *awssqs.Queue
	workARN     string
	coordinator lambda.Handler
	consumer    lambda.Handler
	jobs        *baton.Catalog
	ledger      ledger.Store

	mu    sync.Mutex
	calls map[string]int // processor calls per asset
}

type deployOpts struct {
	maxReceives  int
	noDeadLetter bool // the consumer does not forward: the queue's redrive dead-letters
}

func deploy(t *testing.T, o deployOpts) *deployment {
	t.Helper()
	ddb, q := localaws.DynamoDB(t), localaws.SQS(t)
	c := awsbackend.NewClients(aws.Config{Region: ddb.Region, Credentials: ddb.Credentials},
		awsbackend.Endpoints{DynamoDB: ddb.URL, SQS: q.URL})
	res, err := awsbackend.Setup(t.Context(), c, awsbackend.SetupParams{
		Table: uniqueName("e2e"), Queue: uniqueName("e2e"), MaxReceives: o.maxReceives, Visibility: 10 * time.Second,
	})
	require.NoError(t, err)
	d := &deployment{
		clients: c, res: res, calls: map[string]int{},
		work: awssqs.New(c.SQS, res.QueueURL, nil), dlq: awssqs.New(c.SQS, res.DLQURL, nil),
	}
	out, err := c.SQS.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(res.QueueURL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	require.NoError(t, err)
	d.workARN = out.Attributes[string(types.QueueAttributeNameQueueArn)]

	// The fixtures' ticks are fixed in the past: no age bound.
	vars := map[string]string{lambdaapp.EnvTriggerAge: "0"}
	for _, kv := range res.Env() {
		vars[kv[0]] = kv[1]
	}
	getenv := func(name string) string { return vars[name] }
	logs := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("handler logs and metrics:\n%s", logs)
		}
	})
	env := lambdaapp.Env{GetenvFunc: getenv, Stdout: logs, Stderr: logs}

	ccfg, err := lambdaapp.LoadConfig(lambdaapp.Coordinator, getenv)
	require.NoError(t, err)
	coord, err := lambdaapp.NewCoordinatorHandler(lambdaapp.ParamsOnAWS(ccfg, c, env, fx.Catalog(nil)))
	require.NoError(t, err)
	d.coordinator = lambda.NewHandler(coord.Handle)

	kcfg, err := lambdaapp.LoadConfig(lambdaapp.Consumer, getenv)
	require.NoError(t, err)
	p := lambdaapp.ParamsOnAWS(kcfg, c, env, fx.Catalog(nil))
	// Count the processor's calls per asset.
	j, _ := p.Jobs.Lookup(fx.Name)
	inner := j.Processor
	j.Processor = baton.ProcessorFunc(func(ctx context.Context, task baton.Task) ([]byte, error) {
		d.mu.Lock()
		d.calls[task.Asset]++
		d.mu.Unlock()
		return inner.Process(ctx, task)
	})
	p.Jobs = baton.MustCatalog(j)
	if o.noDeadLetter {
		p.DeadLetter, p.MaxReceives = nil, 0
	}
	cons, err := lambdaapp.NewConsumerHandler(p)
	require.NoError(t, err)
	d.consumer = lambda.NewHandler(cons.Handle)
	d.jobs, d.ledger = p.Jobs, p.Ledger
	return d
}

// batches records every batch the event source handed the consumer and
// the failures it reported.
type batches struct {
	mu  sync.Mutex
	all []batch
}

type batch struct {
	ids, failed []string
	bodies      map[string]string // by message id
}

// poller returns a poller that behaves like Lambda's SQS event source
// (batches of up to 10, two at once, a 10 s function timeout, partial batch
// responses, failed messages visible again after 1 s) feeding the consumer
// handler through an EventSource, and records the batches in b.
func (d *deployment) poller(b *batches) *poller.Poller {
	es := &lambdaapp.EventSource{Handler: d.consumer, QueueARN: d.workARN, Region: localaws.Region}
	return &poller.Poller{
		Receiver: d.work, BatchSize: 10, Concurrency: 2, Timeout: 10 * time.Second,
		Wait: 100 * time.Millisecond, RetryDelay: time.Second,
		HandleFunc: func(ctx context.Context, deadline time.Time, msgs []queue.Delivery) []string {
			failed := es.Handle(ctx, deadline, msgs)
			rec := batch{failed: failed, bodies: map[string]string{}}
			for _, m := range msgs {
				rec.ids = append(rec.ids, m.MessageID)
				rec.bodies[m.MessageID] = string(m.Body)
			}
			b.mu.Lock()
			b.all = append(b.all, rec)
			b.mu.Unlock()
			return failed
		},
	}
}

// receiveAll receives what q holds, waiting up to 5 s for at least want
// messages.
func receiveAll(t *testing.T, q *awssqs.Queue, want int) []queue.Delivery {
	t.Helper()
	var got []queue.Delivery
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		ds, err := q.Receive(t.Context(), queue.ReceiveParams{Max: queue.MaxBatch, Visibility: time.Minute})
		require.NoError(t, err)
		got = append(got, ds...)
	}
	return got
}

// invokeCoordinator invokes the coordinator as Lambda does: the JSON path,
// a request id, a deadline.
func (d *deployment) invokeCoordinator(t *testing.T, payload []byte, requestID string) (lambdaapp.CoordinatorResponse, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: requestID})
	var resp lambdaapp.CoordinatorResponse
	out, err := d.coordinator.Invoke(ctx, payload)
	if err != nil {
		return resp, err
	}
	return resp, json.Unmarshal(out, &resp)
}

// retryDelay stands for Lambda's wait before an asynchronous retry (about
// a minute on AWS).
const retryDelay = 200 * time.Millisecond

// triggerCoordinator delivers an asynchronous trigger: the invocation, and
// up to 2 retries (the template's MaximumRetryAttempts) while it fails with
// lambdaapp.ErrIncomplete, as Lambda retries a failed asynchronous
// invocation with the same request id.
func (d *deployment) triggerCoordinator(t *testing.T, payload []byte, requestID string) (lambdaapp.CoordinatorResponse, int, error) {
	for attempt := 1; ; attempt++ {
		resp, err := d.invokeCoordinator(t, payload, requestID)
		if attempt == 3 || !errors.Is(err, lambdaapp.ErrIncomplete) {
			return resp, attempt, err
		}
		select {
		case <-t.Context().Done():
			return resp, attempt, t.Context().Err()
		case <-time.After(retryDelay):
		}
	}
}

// TestAWSEndToEnd: the scheduled rule event and 5 concurrent duplicates
// open one run; real SQS with a redrive policy; the consumer handler fed
// by a poller that behaves like Lambda's event source; every asset
// processed exactly once; DXY derived; a malformed message dead-lettered
// with its reason.
func TestAWSEndToEnd(t *testing.T) {
	t.Parallel()
	d := deploy(t, deployOpts{maxReceives: 3})
	var rec batches
	p := d.poller(&rec)
	runID := ledger.RunID{Job: fx.Name, Nominal: tick, Generation: 1}

	// First batch: a derived message of a run no coordinator opened yet
	// (the ledger does not vouch for it) and a message that is not
	// baton's. Both are forwarded to the dead-letter queue with their
	// reasons and acknowledged: neither is retried, nothing is written.
	early := message.New(ledger.ItemKey{Run: runID, Asset: fx.DXY}, 1, true).QueueMessage()
	const malformed = "this is not a baton message"
	_, err := queue.SendAll(t.Context(), d.work, []queue.Message{early, {Body: []byte(malformed)}}, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { // on another goroutine: no require inside
		n, err := p.Poll(t.Context())
		return err == nil && n > 0
	}, 5*time.Second, 10*time.Millisecond)
	require.Len(t, rec.all, 1)
	first := rec.all[0]
	require.Len(t, first.ids, 2, "both messages in one batch")
	require.Empty(t, first.failed, "both dead-lettered at once")
	_, err = d.ledger.GetItem(t.Context(), ledger.ItemKey{Run: runID, Asset: fx.DXY})
	require.ErrorIs(t, err, ledger.ErrNotFound, "the unvouched message wrote nothing")

	// The scheduled rule event and 5 duplicates, all at once. A duplicate
	// that finds the lease held before the run is fanned out fails (the
	// tick may still need it) and is retried, as Lambda retries it.
	payload := fixture(t, "coordinator-scheduled.json")
	resps := make([]lambdaapp.CoordinatorResponse, 6)
	errs := make([]error, 6)
	var wg sync.WaitGroup
	for i := range resps {
		wg.Go(func() { resps[i], _, errs[i] = d.triggerCoordinator(t, payload, fmt.Sprintf("req-%d", i)) })
	}
	wg.Wait()
	outcomes := map[string]int{}
	enqueued := 0
	for i, r := range resps {
		require.NoError(t, errs[i], "trigger %d, retries included", i)
		outcomes[r.Outcome]++
		enqueued += r.Enqueued
		if r.Outcome == "opened" {
			require.Equal(t, runID.String(), r.Run)
			require.EqualValues(t, 1, r.Fence, "the first lease on a new table")
		}
	}
	require.Equal(t, 1, outcomes["opened"], "%v", outcomes)
	require.Equal(t, 5, outcomes["skipped"]+outcomes["already_fanned_out"], "%v", outcomes)
	require.Equal(t, len(fx.Assets), enqueued)
	runs, err := d.ledger.ListRuns(t.Context(), ledger.ListRunsParams{Job: fx.Name})
	require.NoError(t, err)
	require.Len(t, runs, 1, "one tick, one run")
	require.Equal(t, runID, runs[0].ID)

	ctx, stop := context.WithCancel(t.Context())
	var pollers sync.WaitGroup
	pollers.Go(func() { _ = p.Run(ctx) })
	defer func() { stop(); pollers.Wait() }()

	names := append(append([]string{}, fx.Assets...), fx.DXY)
	// Conditions run on another goroutine: no require inside.
	require.Eventually(t, func() bool {
		items, err := d.ledger.ListItems(t.Context(), runID)
		if err != nil {
			return false
		}
		done := 0
		for _, it := range items {
			if it.State == ledger.ItemSucceeded {
				done++
			}
		}
		if done < len(names) {
			return false
		}
		depth, err := d.work.Depth(t.Context())
		return err == nil && depth.Total() == 0 // every message acknowledged, the early one too
	}, 20*time.Second, 50*time.Millisecond)
	stop()
	pollers.Wait()

	// Every item succeeded exactly once: first attempt, one processor call.
	items, err := d.ledger.ListItems(t.Context(), runID)
	require.NoError(t, err)
	require.Len(t, items, len(names))
	closes := map[string]float64{}
	for _, it := range items {
		require.Equal(t, ledger.ItemSucceeded, it.State, it.Key.Asset)
		require.Equal(t, 1, it.Attempt, it.Key.Asset)
		require.EqualValues(t, 1, it.Fence, it.Key.Asset)
		var r fx.Bar
		require.NoError(t, json.Unmarshal(it.Result, &r), it.Key.Asset)
		closes[it.Key.Asset] = r.Close
	}
	d.mu.Lock()
	for _, n := range names {
		require.Equal(t, 1, d.calls[n], "processor calls for %s", n)
	}
	require.Len(t, d.calls, len(names))
	d.mu.Unlock()

	// DXY is derived from its inputs' closes.
	in := map[string]float64{}
	for _, a := range fx.DXYInputs {
		in[a] = closes[a]
	}
	want, err := fx.DollarIndex(in)
	require.NoError(t, err)
	require.InDelta(t, want, closes[fx.DXY], 0.01)

	// The run settles complete.
	c := &coordinator.Coordinator{Ledger: d.ledger, Jobs: d.jobs}
	run, err := c.Settle(t.Context(), fx.Name, tick)
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Equal(t, len(names), run.Succeeded)

	// The malformed and the unvouched messages are in the dead-letter
	// queue, with their reasons.
	dead := receiveAll(t, d.dlq, 2)
	require.Len(t, dead, 2)
	reasons := map[string]string{}
	for _, m := range dead {
		reasons[string(m.Body)] = m.Attributes[message.AttrError]
	}
	require.Contains(t, reasons[malformed], "malformed")
	require.Contains(t, reasons[string(early.Body)], "not vouched for by the ledger")
	require.Contains(t, reasons[string(early.Body)], "the tick has no run")
}

// TestAWSRedriveToDeadLetterQueue: a consumer that does not forward
// (no dead-letter queue configured) keeps reporting a malformed message
// failed; the queue's redrive policy moves it to the dead-letter queue
// after maxReceiveCount receives.
func TestAWSRedriveToDeadLetterQueue(t *testing.T) {
	t.Parallel()
	d := deploy(t, deployOpts{maxReceives: 2, noDeadLetter: true})
	var rec batches
	p := d.poller(&rec)
	const malformed = "not for baton either"
	_, err := queue.SendAll(t.Context(), d.work, []queue.Message{{Body: []byte(malformed)}}, nil)
	require.NoError(t, err)

	ctx, stop := context.WithCancel(t.Context())
	var pollers sync.WaitGroup
	pollers.Go(func() { _ = p.Run(ctx) })
	defer func() { stop(); pollers.Wait() }()

	dead := receiveAll(t, d.dlq, 1)
	deadline := time.Now().Add(10 * time.Second)
	for len(dead) == 0 && time.Now().Before(deadline) {
		dead = receiveAll(t, d.dlq, 1)
	}
	stop()
	pollers.Wait()
	require.Len(t, dead, 1)
	require.Equal(t, malformed, string(dead[0].Body))
	require.Empty(t, dead[0].Attributes[message.AttrError], "moved by the queue, not forwarded by the consumer")

	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.all, 2, "received maxReceiveCount times, failed each time")
	for _, b := range rec.all {
		require.Equal(t, b.ids, b.failed)
	}
	depth, err := d.work.Depth(t.Context())
	require.NoError(t, err)
	require.Zero(t, depth.Total())
}
