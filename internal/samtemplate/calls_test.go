package samtemplate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/awssqs"
	"github.com/batonhq/baton/internal/backend/awsbackend"
	"github.com/batonhq/baton/internal/lambdaapp"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/localaws"
)

// iamAction is the IAM action that authorises an SDK operation: batch
// operations are authorised by their single-message action.
func iamAction(service, op string) string {
	switch op {
	case "SendMessageBatch":
		op = "SendMessage"
	case "DeleteMessageBatch":
		op = "DeleteMessage"
	case "ChangeMessageVisibilityBatch":
		op = "ChangeMessageVisibility"
	}
	return service + ":" + op
}

// access is one AWS call: the IAM action that authorises it and, for a
// DynamoDB item operation, the partition key it addresses (what
// dynamodb:LeadingKeys is matched against).
type access struct {
	action string
	pk     string // "" when the call addresses no item
}

func (a access) String() string {
	if a.pk == "" {
		return a.action
	}
	return fmt.Sprintf("%s on %q", a.action, a.pk)
}

// recorder records the calls of the SDK clients it is installed on.
type recorder struct {
	hashKey string // the table's partition key attribute
	mu      sync.Mutex
	calls   []access
	errs    []error
}

func (r *recorder) middleware(service string) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("samtemplate.recorder",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				op := awsmiddleware.GetOperationName(ctx)
				pk, err := partitionKey(in.Parameters, r.hashKey)
				r.mu.Lock()
				r.calls = append(r.calls, access{action: iamAction(service, op), pk: pk})
				if err != nil {
					r.errs = append(r.errs, fmt.Errorf("%s: %w", op, err))
				}
				r.mu.Unlock()
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	}
}

func (r *recorder) accesses(t *testing.T) []access {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.NoError(t, errors.Join(r.errs...))
	return slices.Clone(r.calls)
}

// clients returns SDK clients on the emulators that record into r.
func (r *recorder) clients(t *testing.T) awsbackend.Clients {
	t.Helper()
	return awsbackend.Clients{
		DynamoDB: localaws.DynamoDBClient(t, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, r.middleware("dynamodb")) }),
		SQS:      localaws.SQSClient(t, func(o *sqs.Options) { o.APIOptions = append(o.APIOptions, r.middleware("sqs")) }),
	}
}

var keyEquality = regexp.MustCompile(`(#?[A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)`)

// partitionKey returns the partition key a DynamoDB item operation
// addresses; "" for other operations (table-level ones, SQS).
func partitionKey(params any, hashKey string) (string, error) {
	var key map[string]types.AttributeValue
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		key = in.Key
	case *dynamodb.PutItemInput:
		key = in.Item
	case *dynamodb.UpdateItemInput:
		key = in.Key
	case *dynamodb.DeleteItemInput:
		key = in.Key
	case *dynamodb.QueryInput:
		for _, m := range keyEquality.FindAllStringSubmatch(aws.ToString(in.KeyConditionExpression), -1) {
			name := m[1]
			if n, ok := in.ExpressionAttributeNames[name]; ok {
				name = n
			}
			if name == hashKey {
				key = map[string]types.AttributeValue{hashKey: in.ExpressionAttributeValues[m[2]]}
			}
		}
		if key == nil {
			return "", fmt.Errorf("no equality on %s in the key condition %q", hashKey, aws.ToString(in.KeyConditionExpression))
		}
	case *dynamodb.BatchGetItemInput, *dynamodb.BatchWriteItemInput, *dynamodb.TransactGetItemsInput,
		*dynamodb.TransactWriteItemsInput, *dynamodb.ScanInput, *dynamodb.ExecuteStatementInput:
		return "", fmt.Errorf("%T: the check knows no partition key for it; teach it", params)
	default:
		return "", nil
	}
	s, ok := key[hashKey].(*types.AttributeValueMemberS)
	if !ok {
		return "", fmt.Errorf("%T: no string %s in its key", params, hashKey)
	}
	return s.Value, nil
}

// hashKey is the partition key attribute of the table the adapter creates.
func hashKey(t *testing.T) string {
	t.Helper()
	var rec tableRecorder
	require.NoError(t, awsdynamodb.CreateTable(context.Background(), &rec, "t"))
	for _, k := range rec.create.KeySchema {
		if k.KeyType == types.KeyTypeHash {
			return aws.ToString(k.AttributeName)
		}
	}
	t.Fatal("the adapter's table has no partition key")
	return ""
}

// exercised is what both handlers did in exercise: their calls and the
// EMF metric lines they wrote.
type exercised struct {
	calls   map[string][]access // by the template's function
	metrics []byte
}

// exercise runs both handlers in-process on the emulators with clients
// that record every call: the coordinator opens a tick, sees it fanned
// out, replays it by force and meets a held lease (which it counts); the
// consumer processes fanned-out messages, a duplicate and a malformed one.
func exercise(t *testing.T) exercised {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("baton-iam-%d", time.Now().UnixNano())
	plainDDB := localaws.DynamoDBClient(t)
	require.NoError(t, awsdynamodb.CreateTable(ctx, plainDDB, name))
	plainSQS := localaws.SQSClient(t)
	workURL, dlqURL, err := awssqs.EnsureQueues(ctx, plainSQS, name, 5, 180*time.Second)
	require.NoError(t, err)
	cfg := lambdaapp.Config{Table: name, QueueURL: workURL, DLQURL: dlqURL, MaxReceives: 5, TriggerSkew: time.Minute}
	var metrics bytes.Buffer
	env := lambdaapp.Env{Stdout: &metrics, Stderr: io.Discard}
	key := hashKey(t)
	coordRec, consRec := &recorder{hashKey: key}, &recorder{hashKey: key}

	// Coordinator: open, already fanned out (settles), forced replay.
	coord, err := lambdaapp.NewCoordinatorHandler(lambdaapp.ParamsOnAWS(cfg, coordRec.clients(t), env, fx.Catalog(nil)))
	require.NoError(t, err)
	nominal := time.Now().UTC().Truncate(time.Minute)
	trigger := func(at time.Time, force bool) error {
		payload := fmt.Sprintf(`{"job":"fx","scheduledTime":%q,"force":%t}`, at.Format(time.RFC3339), force)
		_, err := coord.Handle(ctx, json.RawMessage(payload))
		return err
	}
	for _, force := range []bool{false, false, true} {
		require.NoError(t, trigger(nominal, force))
	}

	// Consumer: the fanned-out messages, a duplicate and a malformed one.
	out, err := plainSQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(workURL), MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	require.NoError(t, err)
	require.NotEmpty(t, out.Messages)
	var ev events.SQSEvent
	for _, m := range out.Messages {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: *m.MessageId, ReceiptHandle: *m.ReceiptHandle, Body: *m.Body, Attributes: m.Attributes})
	}
	ev.Records = append(ev.Records, ev.Records[0], events.SQSMessage{MessageId: "malformed", Body: "not a baton message"})
	ev.Records[len(ev.Records)-2].MessageId = "duplicate"
	cons, err := lambdaapp.NewConsumerHandler(lambdaapp.ParamsOnAWS(cfg, consRec.clients(t), env, fx.Catalog(nil)))
	require.NoError(t, err)
	_, err = cons.Handle(ctx, ev)
	require.NoError(t, err)

	// Coordinator: an earlier tick behind a lease someone else holds is
	// refused (and retried), the refusal counted.
	_, err = awsdynamodb.NewLeaseStore(plainDDB, name, nil).Acquire(ctx, lease.AcquireParams{
		Job: fx.Name, Owner: "someone-else", TTL: time.Minute, Now: time.Now(),
	})
	require.NoError(t, err)
	require.ErrorIs(t, trigger(nominal.Add(-time.Minute), false), lambdaapp.ErrIncomplete)

	return exercised{
		calls:   map[string][]access{"CoordinatorFunction": coordRec.accesses(t), "ConsumerFunction": consRec.accesses(t)},
		metrics: metrics.Bytes(),
	}
}

// allows reports whether st grants a: the action, and, when st has a
// dynamodb:LeadingKeys condition, the partition key.
func (st statement) allows(a access) bool {
	if !slices.Contains(st.actions, a.action) {
		return false
	}
	if st.leadingKeys == nil {
		return !st.conditioned
	}
	if a.pk == "" {
		return false // a call without a key would pass ForAllValues vacuously: none is expected here
	}
	return slices.ContainsFunc(st.leadingKeys, func(p string) bool { return stringLike(p, a.pk) })
}

// TestCallsAreGranted checks that the template grants each function every
// call its handler makes (exercise), each DynamoDB item call on a record
// kind its role's dynamodb:LeadingKeys condition allows.
func TestCallsAreGranted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	got := exercise(t)
	for fn, calls := range got.calls {
		require.NotEmpty(t, calls, fn)
		statements := b.statements(t, fn)
		for _, a := range calls {
			require.True(t, slices.ContainsFunc(statements, func(st statement) bool { return st.allows(a) }),
				"%s calls %s, which its role does not grant", fn, a)
		}
	}
	// Operators run both handlers in their own process (baton replay,
	// invoke, in-process consumers).
	operator := parseStatements(t, at(t, b.resource(t, "OperatorPolicy"), "Properties", "PolicyDocument", "Statement"))
	for fn, calls := range got.calls {
		for _, a := range calls {
			require.True(t, slices.ContainsFunc(operator, func(st statement) bool { return st.allows(a) }),
				"%s calls %s, which the operators' policy does not grant", fn, a)
		}
	}
	require.Contains(t, got.calls["ConsumerFunction"], access{action: "sqs:SendMessage"},
		"the consumer dead-lettered the malformed message and enqueued nothing else?")
	require.True(t, slices.ContainsFunc(got.calls["CoordinatorFunction"], func(a access) bool {
		return a.action == "dynamodb:UpdateItem" && strings.HasPrefix(a.pk, "CONTENTION#")
	}), "the coordinator did not count the refused acquisition")
}

// TestAlarmsWatchEmittedMetrics checks that every alarm on baton's own
// metrics watches a metric the functions write, with the dimensions they
// write it with, for a job of the catalog.
func TestAlarmsWatchEmittedMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	got := exercise(t)

	emitted := map[string][][]string{} // metric → its dimension sets
	for line := range strings.Lines(string(got.metrics)) {
		var rec struct {
			AWS struct {
				CloudWatchMetrics []struct {
					Namespace  string
					Dimensions [][]string
					Metrics    []struct{ Name string }
				}
			} `json:"_aws"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "%s", line)
		for _, d := range rec.AWS.CloudWatchMetrics {
			require.Equal(t, lambdaapp.DefaultNamespace, d.Namespace)
			for _, m := range d.Metrics {
				for _, dims := range d.Dimensions {
					emitted[m.Name] = append(emitted[m.Name], slices.Sorted(slices.Values(dims)))
				}
			}
		}
	}
	require.NotEmpty(t, emitted)

	jobs := fx.Catalog(nil).Names()
	watched := 0
	for name, r := range at(t, b.tpl, "Resources").(map[string]any) {
		if at(t, r, "Type") != "AWS::CloudWatch::Alarm" || !isBatonNamespace(b.tpl, at(t, r, "Properties", "Namespace")) {
			continue
		}
		watched++
		metric := at(t, r, "Properties", "MetricName").(string)
		require.Contains(t, emitted, metric, "%s watches %s, which no function writes", name, metric)
		var dims []string
		for _, d := range at(t, r, "Properties", "Dimensions").([]any) {
			dims = append(dims, at(t, d, "Name").(string))
			if at(t, d, "Name") == "Job" {
				require.Contains(t, jobs, at(t, d, "Value"), "%s: not a job of the catalog", name)
			}
			if at(t, d, "Name") == "service" {
				require.Equal(t, serviceDimension, d, "%s: the stack's own metrics", name)
			}
		}
		slices.Sort(dims)
		require.Contains(t, emitted[metric], dims, "%s: %s is written with the dimensions %v", name, metric, emitted[metric])
	}
	require.Positive(t, watched, "no alarm on baton's metrics")
}

// TestOperatorCallsAreGranted checks that the operators' policy grants
// what the CLI does to reach the stack: `baton setup` (creating, then
// finding everything as it is) and the start-up check of every command
// with --backend aws.
func TestOperatorCallsAreGranted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	rec := &recorder{hashKey: hashKey(t)}
	c := rec.clients(t)
	p := awsbackend.SetupParams{Table: fmt.Sprintf("baton-op-%d", time.Now().UnixNano()), Queue: fmt.Sprintf("baton-op-%d", time.Now().UnixNano())}
	var res awsbackend.Resources
	for range 2 {
		var err error
		res, err = awsbackend.Setup(ctx, c, p)
		require.NoError(t, err)
	}
	bk, err := awsbackend.Open(ctx, awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL})
	require.NoError(t, err)
	require.NoError(t, bk.Close())

	operator := parseStatements(t, at(t, b.resource(t, "OperatorPolicy"), "Properties", "PolicyDocument", "Statement"))
	calls := rec.accesses(t)
	require.NotEmpty(t, calls)
	for _, a := range calls {
		require.True(t, slices.ContainsFunc(operator, func(st statement) bool { return st.allows(a) }),
			"the CLI calls %s, which the operators' policy does not grant", a)
	}
}
