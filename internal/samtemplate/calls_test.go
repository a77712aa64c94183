package samtemplate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/awssqs"
	"github.com/batonhq/baton/internal/backend/awsbackend"
	"github.com/batonhq/baton/internal/bench/awscall"
	"github.com/batonhq/baton/internal/lambdaapp"
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

// TestCallsAreGranted runs both handlers in-process on the emulators with
// clients that record every operation, and checks that the template grants
// each function every action its calls need.
func TestCallsAreGranted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ddbEP, sqsEP := localaws.DynamoDB(t), localaws.SQS(t)
	name := fmt.Sprintf("baton-iam-%d", time.Now().UnixNano())
	require.NoError(t, awsdynamodb.CreateTable(ctx, localaws.DynamoDBClient(t), name))
	plainSQS := localaws.SQSClient(t)
	workURL, dlqURL, err := awssqs.EnsureQueues(ctx, plainSQS, name, 5, 180*time.Second)
	require.NoError(t, err)
	cfg := lambdaapp.Config{Table: name, QueueURL: workURL, DLQURL: dlqURL, MaxReceives: 5, TriggerSkew: time.Minute}
	env := lambdaapp.Env{Stdout: io.Discard, Stderr: io.Discard}

	// Each function gets its own counting clients.
	clients := func() (awsbackend.Clients, *awscall.Counter, *awscall.Counter) {
		var dc, sc awscall.Counter
		return awsbackend.Clients{
			DynamoDB: dynamodb.NewFromConfig(ddbEP.Config(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, dc.Middleware()) }),
			SQS:      sqs.NewFromConfig(sqsEP.Config(), func(o *sqs.Options) { o.APIOptions = append(o.APIOptions, sc.Middleware()) }),
		}, &dc, &sc
	}
	called := func(dc, sc *awscall.Counter) []string {
		var out []string
		for op := range dc.Snapshot() {
			out = append(out, iamAction("dynamodb", op))
		}
		for op := range sc.Snapshot() {
			out = append(out, iamAction("sqs", op))
		}
		return out
	}
	granted := func(fn string) map[string]bool {
		out := map[string]bool{}
		for _, st := range b.statements(t, fn) {
			for _, a := range st.actions {
				out[a] = true
			}
		}
		return out
	}

	// Coordinator: open, already fanned out (settles), forced replay.
	cc, cdc, csc := clients()
	coord, err := lambdaapp.NewCoordinatorHandler(lambdaapp.ParamsOnAWS(cfg, cc, env, fx.Catalog(nil)))
	require.NoError(t, err)
	nominal := time.Now().UTC().Truncate(time.Minute)
	for _, force := range []bool{false, false, true} {
		payload := fmt.Sprintf(`{"job":"fx","scheduledTime":%q,"force":%t}`, nominal.Format(time.RFC3339), force)
		_, err := coord.Handle(ctx, json.RawMessage(payload))
		require.NoError(t, err)
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
	kc, kdc, ksc := clients()
	cons, err := lambdaapp.NewConsumerHandler(lambdaapp.ParamsOnAWS(cfg, kc, env, fx.Catalog(nil)))
	require.NoError(t, err)
	_, err = cons.Handle(ctx, ev)
	require.NoError(t, err)

	for fn, calls := range map[string][]string{
		"CoordinatorFunction": called(cdc, csc),
		"ConsumerFunction":    called(kdc, ksc),
	} {
		require.NotEmpty(t, calls, fn)
		g := granted(fn)
		for _, a := range calls {
			require.True(t, g[a], "%s calls %s, which its role does not grant", fn, a)
		}
	}
	require.Contains(t, called(kdc, ksc), "sqs:SendMessage", "the consumer dead-lettered the malformed message and enqueued nothing else?")
}
