package awscall_test

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/lab/bench/awscall"
)

// fakeSQS answers every request with 200 and body, except that the first
// failFirst requests get a 500.
type fakeSQS struct {
	failFirst int32
	n         atomic.Int32
	body      string
}

func (f *fakeSQS) Do(req *http.Request) (*http.Response, error) {
	n := f.n.Add(1)
	status, body := http.StatusOK, f.body
	if n <= f.failFirst {
		status, body = http.StatusInternalServerError, `{"__type":"com.amazonaws.sqs#InternalError","message":"boom"}`
	}
	return &http.Response{
		StatusCode: status,
		Header:     http.Header{"Content-Type": []string{"application/x-amz-json-1.0"}},
		Body:       io.NopCloser(strings.NewReader(body)),
		Request:    req,
	}, nil
}

func newClient(f *fakeSQS, c *awscall.Counter, twice bool) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("k", "s", ""),
		BaseEndpoint: aws.String("http://127.0.0.1:1"),
		HTTPClient:   f,
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 3
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		}),
	}, func(o *sqs.Options) {
		o.APIOptions = append(o.APIOptions, c.Middleware())
		if twice {
			o.APIOptions = append(o.APIOptions, c.Middleware())
		}
	})
}

func TestCounterCountsCallsByOperation(t *testing.T) {
	t.Parallel()
	var c awscall.Counter
	client := newClient(&fakeSQS{body: `{"QueueUrls":[]}`}, &c, false)
	for range 3 {
		_, err := client.ListQueues(t.Context(), &sqs.ListQueuesInput{})
		require.NoError(t, err)
	}
	_, err := client.GetQueueUrl(t.Context(), &sqs.GetQueueUrlInput{QueueName: aws.String("q")})
	require.NoError(t, err) // the fake's body has no QueueUrl; the call still counts

	require.Equal(t, 3, c.Calls("ListQueues"))
	require.Equal(t, 1, c.Calls("GetQueueUrl"))
	require.Equal(t, 0, c.Calls("SendMessage"))
	require.Equal(t, 4, c.Total())
	require.Equal(t, map[string]int{"ListQueues": 3, "GetQueueUrl": 1}, c.Snapshot())

	c.Reset()
	require.Zero(t, c.Total())
	require.Empty(t, c.Snapshot())
}

func TestCounterAttemptsIncludeRetries(t *testing.T) {
	t.Parallel()
	var c awscall.Counter
	f := &fakeSQS{failFirst: 2, body: `{"QueueUrls":[]}`}
	client := newClient(f, &c, false)
	_, err := client.ListQueues(t.Context(), &sqs.ListQueuesInput{})
	require.NoError(t, err)
	require.Equal(t, 1, c.Calls("ListQueues"))
	require.Equal(t, 3, c.Attempts("ListQueues"))
	require.Equal(t, int32(3), f.n.Load())
}

func TestCounterCountsFailedCalls(t *testing.T) {
	t.Parallel()
	var c awscall.Counter
	client := newClient(&fakeSQS{failFirst: 100}, &c, false)
	_, err := client.ListQueues(t.Context(), &sqs.ListQueuesInput{})
	require.Error(t, err)
	require.Equal(t, 1, c.Calls("ListQueues"))
	require.Equal(t, 3, c.Attempts("ListQueues"))
}

func TestCounterAddedTwiceCountsOnce(t *testing.T) {
	t.Parallel()
	var c awscall.Counter
	client := newClient(&fakeSQS{body: `{}`}, &c, true)
	_, err := client.ListQueues(t.Context(), &sqs.ListQueuesInput{})
	require.NoError(t, err)
	require.Equal(t, 1, c.Calls("ListQueues"))
	require.Equal(t, 1, c.Attempts("ListQueues"))
}

func TestCounterConcurrentUse(t *testing.T) {
	t.Parallel()
	var c awscall.Counter
	client := newClient(&fakeSQS{body: `{}`}, &c, false)
	done := make(chan struct{})
	for range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 10 {
				_, _ = client.ListQueues(t.Context(), &sqs.ListQueuesInput{})
			}
		}()
	}
	for range 8 {
		<-done
	}
	require.Equal(t, 80, c.Calls("ListQueues"))
}

// fakeBodies answers each request with the next body of a list.
type fakeBodies struct {
	n      atomic.Int32
	bodies []string
}

func (f *fakeBodies) Do(req *http.Request) (*http.Response, error) {
	i := int(f.n.Add(1)) - 1
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": []string{"application/x-amz-json-1.0"}},
		Body:       io.NopCloser(strings.NewReader(f.bodies[min(i, len(f.bodies)-1)])),
		Request:    req,
	}, nil
}

func TestCounterBillsSQSRequestsByChunk(t *testing.T) {
	t.Parallel()
	var c awscall.Counter
	big := strings.Repeat("x", 100<<10) // two 64 KB chunks
	f := &fakeBodies{bodies: []string{
		`{"Successful":[],"Failed":[]}`,
		`{"Messages":[{"MessageId":"m","ReceiptHandle":"r","Body":"` + big + `"}]}`,
		`{}`, // an empty receive
		`{}`,
	}}
	client := sqs.New(sqs.Options{
		Region:                           "us-east-1",
		Credentials:                      credentials.NewStaticCredentialsProvider("k", "s", ""),
		BaseEndpoint:                     aws.String("http://127.0.0.1:1"),
		HTTPClient:                       f,
		DisableMessageChecksumValidation: true,
	}, func(o *sqs.Options) { o.APIOptions = append(o.APIOptions, c.Middleware()) })
	q := aws.String("http://127.0.0.1:1/q")
	entries := []sqstypes.SendMessageBatchRequestEntry{
		{Id: aws.String("a"), MessageBody: aws.String(strings.Repeat("y", 70<<10))},
		{Id: aws.String("b"), MessageBody: aws.String(strings.Repeat("z", 60<<10)), MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			"k": {DataType: aws.String("String"), StringValue: aws.String("v")},
		}},
	}
	_, err := client.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{QueueUrl: q, Entries: entries})
	require.NoError(t, err)
	require.Equal(t, 3, c.Billed("SQS"), "130 KB and 9 bytes sent: 3 chunks")
	_, err = client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: q})
	require.NoError(t, err)
	require.Equal(t, 5, c.Billed("SQS"), "100 KB received: 2 chunks")
	_, err = client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: q})
	require.NoError(t, err)
	_, err = client.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: q, ReceiptHandle: aws.String("r")})
	require.NoError(t, err)
	require.Equal(t, 7, c.Billed("SQS"), "an empty receive and a delete: 1 each")
	require.Zero(t, c.Billed("DynamoDB"))
	c.Reset()
	require.Zero(t, c.Billed("SQS"))
}

func TestCounterBillsEveryAttempt(t *testing.T) {
	t.Parallel()
	var c awscall.Counter
	client := newClient(&fakeSQS{failFirst: 2, body: `{"QueueUrls":[]}`}, &c, false)
	_, err := client.ListQueues(t.Context(), &sqs.ListQueuesInput{})
	require.NoError(t, err)
	require.Equal(t, 3, c.Billed("SQS"))
}
