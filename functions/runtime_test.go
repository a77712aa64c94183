// Package functions_test builds each function's bootstrap and drives it
// through the Lambda Runtime API
// (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html), served
// by the test, against the DynamoDB and SQS emulators.
package functions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/awssqs"
	"github.com/batonhq/baton/internal/lambdaapp"
	"github.com/batonhq/baton/internal/lambdaruntime"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/localaws"
)

// binDir holds the bootstraps this test binary builds; builds runs each
// build once.
var (
	binDir string
	builds sync.Map // name → func() (string, error)
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "baton-bootstrap-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// build compiles ./functions/<name> for the host as the template builds it
// for Lambda (no RPC, static, trimmed paths), once per test binary, and
// returns the bootstrap path.
func build(t *testing.T, name string) string {
	t.Helper()
	f, _ := builds.LoadOrStore(name, sync.OnceValues(func() (string, error) {
		out := filepath.Join(binDir, name, "bootstrap") // the directory names the function in logs
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", out, "./functions/"+name)
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("build %s: %v\n%s", name, err, b)
		}
		return out, nil
	}))
	out, err := f.(func() (string, error))()
	require.NoError(t, err)
	return out
}

const fnARN = "arn:aws:lambda:us-east-1:123456789012:function:baton-test"

// newRuntimeAPI serves the Runtime API for one bootstrap until the test ends.
func newRuntimeAPI(t *testing.T) *lambdaruntime.Server {
	t.Helper()
	api, err := lambdaruntime.Start(fnARN)
	require.NoError(t, err)
	t.Cleanup(func() { _ = api.Close() })
	return api
}

// invoke hands payload to the function and waits for its answer.
func invoke(t *testing.T, api *lambdaruntime.Server, id string, payload []byte, timeout time.Duration) lambdaruntime.Answer {
	t.Helper()
	api.Next <- lambdaruntime.Invocation{ID: id, Payload: payload, Deadline: time.Now().Add(timeout)}
	select {
	case res := <-api.Answers:
		require.Equal(t, id, res.ID)
		return res
	case <-time.After(timeout + 10*time.Second):
		t.Fatalf("invocation %s: no answer", id)
		return lambdaruntime.Answer{}
	}
}

// process is a running bootstrap.
type process struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs bin with exactly env (nothing inherited: no credentials or
// profiles of the machine leak in) and the Runtime API address.
func start(t *testing.T, bin string, api *lambdaruntime.Server, env map[string]string) *process {
	t.Helper()
	dir := t.TempDir()
	base := map[string]string{
		"AWS_LAMBDA_RUNTIME_API":          api.Addr,
		"AWS_LAMBDA_FUNCTION_NAME":        "baton-test",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
		"AWS_REGION":                      localaws.Region,
		"AWS_ACCESS_KEY_ID":               "test",
		"AWS_SECRET_ACCESS_KEY":           "test",
		"AWS_CONFIG_FILE":                 filepath.Join(dir, "none"),
		"AWS_SHARED_CREDENTIALS_FILE":     filepath.Join(dir, "none"),
		"AWS_EC2_METADATA_DISABLED":       "true",
		"HOME":                            dir,
	}
	for k, v := range env {
		base[k] = v
	}
	p := &process{cmd: exec.Command(bin), stderr: &syncBuffer{}, done: make(chan error, 1)}
	for k, v := range base {
		if v != "" {
			p.cmd.Env = append(p.cmd.Env, k+"="+v)
		}
	}
	p.cmd.Stdout, p.cmd.Stderr = p.stderr, p.stderr
	require.NoError(t, p.cmd.Start())
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(filepath.Dir(bin)), p.stderr.String())
		}
	})
	return p
}

// stack is the table and queues one test's functions use.
type stack struct {
	env      map[string]string
	table    string
	queueURL string
	sqs      *sqs.Client
}

func newStack(t *testing.T) stack {
	t.Helper()
	ctx := context.Background()
	ddbEP, sqsEP := localaws.DynamoDB(t), localaws.SQS(t)
	ddb, sq := localaws.DynamoDBClient(t), localaws.SQSClient(t)
	name := fmt.Sprintf("baton-rt-%d", time.Now().UnixNano())
	require.NoError(t, awsdynamodb.CreateTable(ctx, ddb, name))

	workURL, dlqURL, err := awssqs.EnsureQueues(ctx, sq, name, 5, 180*time.Second)
	require.NoError(t, err)
	return stack{
		table: name, queueURL: workURL, sqs: sq,
		env: map[string]string{
			"AWS_ENDPOINT_URL_DYNAMODB": ddbEP.URL,
			"AWS_ENDPOINT_URL_SQS":      sqsEP.URL,
			lambdaapp.EnvTable:          name,
			lambdaapp.EnvQueueURL:       workURL,
			lambdaapp.EnvDLQURL:         dlqURL,
			lambdaapp.EnvMaxReceives:    "5",
			lambdaapp.EnvLogLevel:       "debug",
		},
	}
}

// receiveAll takes every visible message of the queue, as the SQS event
// source would hand them to the consumer.
func (s stack) receiveAll(t *testing.T) []events.SQSMessage {
	t.Helper()
	var out []events.SQSMessage
	for range 20 {
		got, err := s.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(s.queueURL), MaxNumberOfMessages: 10, VisibilityTimeout: 180,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		require.NoError(t, err)
		if len(got.Messages) == 0 {
			break
		}
		for _, m := range got.Messages {
			rec := events.SQSMessage{
				MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
				Body: aws.ToString(m.Body), Attributes: m.Attributes, EventSource: "aws:sqs",
				MessageAttributes: map[string]events.SQSMessageAttribute{},
			}
			for k, a := range m.MessageAttributes {
				rec.MessageAttributes[k] = events.SQSMessageAttribute{StringValue: a.StringValue, DataType: aws.ToString(a.DataType)}
			}
			out = append(out, rec)
		}
	}
	return out
}

func TestBootstrapsThroughRuntimeAPI(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	coordinatorBin, consumerBin := build(t, "coordinator"), build(t, "consumer")
	nominal := time.Now().UTC().Truncate(time.Minute)

	// Coordinator: a Scheduler trigger opens the run and fans out.
	api := newRuntimeAPI(t)
	started := time.Now()
	start(t, coordinatorBin, api, st.env)
	t.Logf("coordinator cold start (exec to first poll): %s", (<-api.Polled).Sub(started))
	payload := fmt.Sprintf(`{"job":"fx","scheduledTime":%q}`, nominal.Format(time.RFC3339))
	res := invoke(t, api, "req-coord-1", []byte(payload), 30*time.Second)
	require.Equal(t, "response", res.Kind, "%s", res.Body)
	var cr lambdaapp.CoordinatorResponse
	require.NoError(t, json.Unmarshal(res.Body, &cr), "%s", res.Body)
	run := ledger.RunID{Job: "fx", Nominal: nominal, Generation: 1}
	require.Equal(t, "opened", cr.Outcome)
	require.Equal(t, run.String(), cr.Run)
	require.Equal(t, len(fx.Assets), cr.Enqueued)
	require.Equal(t, "req-coord-1", cr.RequestID)

	// A malformed trigger is posted to the invocation's /error.
	res = invoke(t, api, "req-coord-2", []byte(`{"job":"fx","scheduledTime":"yesterday"}`), 30*time.Second)
	require.Equal(t, "error", res.Kind)
	var fnErr struct {
		ErrorMessage string `json:"errorMessage"`
		ErrorType    string `json:"errorType"`
	}
	require.NoError(t, json.Unmarshal(res.Body, &fnErr), "%s", res.Body)
	require.Contains(t, fnErr.ErrorMessage, `field "scheduledTime": invalid RFC 3339 time: "yesterday"`)

	// Consumer: the fanned-out messages, as the event source delivers them.
	msgs := st.receiveAll(t)
	require.Len(t, msgs, len(fx.Assets))
	event, err := json.Marshal(events.SQSEvent{Records: msgs})
	require.NoError(t, err)
	api2 := newRuntimeAPI(t)
	start(t, consumerBin, api2, st.env)
	res = invoke(t, api2, "req-cons-1", event, 30*time.Second)
	require.Equal(t, "response", res.Kind, "%s", res.Body)
	require.JSONEq(t, `{"batchItemFailures":[]}`, string(res.Body))

	ledgerStore := awsdynamodb.NewLedgerStore(localaws.DynamoDBClient(t), st.table, nil)
	items, err := ledgerStore.ListItems(context.Background(), run)
	require.NoError(t, err)
	require.Len(t, items, len(fx.Assets))
	for _, it := range items {
		require.Equal(t, ledger.ItemSucceeded, it.State, it.Key.String())
		require.Equal(t, "baton-test/req-cons-1", it.Owner)
	}
	// DXY's inputs all succeeded: the derived item is in the queue (once
	// or more: inputs completing together each enqueue it; its claim
	// absorbs the duplicates).
	derived := st.receiveAll(t)
	require.NotEmpty(t, derived)
	for _, d := range derived {
		require.Contains(t, d.Body, `"key":"`+run.String()+"/"+fx.DXY+`"`)
	}
}

func TestBootstrapInitError(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"coordinator", "consumer"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			bin := build(t, name)
			api := newRuntimeAPI(t)
			p := start(t, bin, api, map[string]string{
				lambdaapp.EnvQueueURL:    "http://127.0.0.1:1/queue/work",
				lambdaapp.EnvDLQURL:      "http://127.0.0.1:1/queue/dlq",
				lambdaapp.EnvMaxReceives: "5",
			})
			select {
			case res := <-api.InitErrors:
				require.Equal(t, lambdaapp.InitErrorType, res.ErrorType)
				var body struct {
					ErrorMessage string `json:"errorMessage"`
					ErrorType    string `json:"errorType"`
				}
				require.NoError(t, json.Unmarshal(res.Body, &body), "%s", res.Body)
				require.Contains(t, body.ErrorMessage, "BATON_TABLE is not set")
				require.Equal(t, lambdaapp.InitErrorType, body.ErrorType)
			case <-time.After(30 * time.Second):
				t.Fatal("no init error posted")
			}
			select {
			case err := <-p.done:
				p.done <- err // for the cleanup
				require.Error(t, err, "the process exits with a failure status")
			case <-time.After(30 * time.Second):
				t.Fatal("the process did not exit after its init error")
			}
		})
	}
}
