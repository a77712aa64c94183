package awsbackend_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend/awsbackend"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/localaws"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

func TestMain(m *testing.M) {
	code := m.Run()
	localaws.Stop()
	os.Exit(code)
}

var seq atomic.Int64

func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e9, seq.Add(1))
}

// clients returns SDK clients for the emulators, configured as a caller of
// NewClients would: a region, credentials, one endpoint per service.
func clients(t *testing.T) awsbackend.Clients {
	t.Helper()
	ddb, q := localaws.DynamoDB(t), localaws.SQS(t)
	cfg := aws.Config{Region: ddb.Region, Credentials: ddb.Credentials}
	return awsbackend.NewClients(cfg, awsbackend.Endpoints{DynamoDB: ddb.URL, SQS: q.URL})
}

func setUp(t *testing.T, c awsbackend.Clients, maxReceives int) awsbackend.Resources {
	t.Helper()
	res, err := awsbackend.Setup(t.Context(), c, awsbackend.SetupParams{
		Table: uniqueName("t"), Queue: uniqueName("q"), MaxReceives: maxReceives, Visibility: 10 * time.Second,
	})
	require.NoError(t, err)
	return res
}

func TestSetupIsIdempotentAndOpenReadsTheRedrivePolicy(t *testing.T) {
	t.Parallel()
	c := clients(t)
	p := awsbackend.SetupParams{Table: uniqueName("t"), Queue: uniqueName("q"), MaxReceives: 3}
	res, err := awsbackend.Setup(t.Context(), c, p)
	require.NoError(t, err)
	require.Equal(t, p.Table, res.Table)
	require.Equal(t, 3, res.MaxReceives)
	again, err := awsbackend.Setup(t.Context(), c, p)
	require.NoError(t, err)
	require.Equal(t, res, again)
	require.Equal(t, [][2]string{
		{"BATON_TABLE", res.Table}, {"BATON_QUEUE_URL", res.QueueURL},
		{"BATON_DLQ_URL", res.DLQURL}, {"BATON_MAX_RECEIVES", "3"},
	}, res.Env())

	// Only the table and the work queue given: the rest from the policy.
	b, err := awsbackend.Open(t.Context(), awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL})
	require.NoError(t, err)
	require.Equal(t, "aws", b.Name)
	require.Equal(t, 3, b.MaxReceives)
	require.NotNil(t, b.DeadLetter)
	require.Equal(t, awsbackend.DefaultReceiveWait, b.ReceiveWait)
	require.NoError(t, b.Close())

	// Everything given, in agreement.
	_, err = awsbackend.Open(t.Context(), awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL, DLQURL: res.DLQURL, MaxReceives: 3})
	require.NoError(t, err)
	// A receive limit that disagrees with the queue.
	_, err = awsbackend.Open(t.Context(), awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL, MaxReceives: 5})
	require.ErrorContains(t, err, "BATON_MAX_RECEIVES is 5 but the work queue's redrive policy moves messages to the dead-letter queue after 3 receives")
}

// A dead-letter queue other than the work queue's redrive target is
// refused, naming both; absent or not, it is not the queue SQS forwards to.
func TestOpenRefusesAnotherDeadLetterQueue(t *testing.T) {
	t.Parallel()
	c := clients(t)
	res := setUp(t, c, 3)
	other := setUp(t, c, 3) // its dead-letter queue exists, and is not res's
	for _, dlq := range []string{other.DLQURL, res.DLQURL + "-absent", other.QueueURL} {
		_, err := awsbackend.Open(t.Context(), awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL, DLQURL: dlq})
		require.ErrorContains(t, err, "BATON_DLQ_URL is "+dlq+" but the work queue's redrive policy moves messages to the dead-letter queue "+res.DLQURL)
	}
	b, err := awsbackend.Open(t.Context(), awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL, DLQURL: res.DLQURL})
	require.NoError(t, err)
	require.Equal(t, res.DLQURL, b.DeadLetter.(interface{ URL() string }).URL())
	// The target under another host name: the same queue (its ARN).
	alias := strings.Replace(res.DLQURL, "127.0.0.1", "localhost", 1)
	require.NotEqual(t, res.DLQURL, alias)
	_, err = awsbackend.Open(t.Context(), awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL, DLQURL: alias})
	require.NoError(t, err)
}

func TestSetupDefaults(t *testing.T) {
	t.Parallel()
	// Setup is idempotent, so the default names may be shared by every
	// test binary using the emulators.
	res, err := awsbackend.Setup(t.Context(), clients(t), awsbackend.SetupParams{})
	require.NoError(t, err)
	require.Equal(t, awsbackend.DefaultTable, res.Table)
	require.Equal(t, awsbackend.DefaultMaxReceives, res.MaxReceives)
	require.Regexp(t, "/"+awsbackend.DefaultQueue+"$", res.QueueURL)
	require.Regexp(t, "/"+awsbackend.DefaultQueue+"-dlq$", res.DLQURL)
}

func TestOpenRefusesWhatIsNotSetUp(t *testing.T) {
	t.Parallel()
	c := clients(t)
	res := setUp(t, c, 5)
	cases := []struct {
		name string
		p    awsbackend.Params
		want string
	}{
		{"no table", awsbackend.Params{Clients: c, QueueURL: res.QueueURL}, "no table (BATON_TABLE)"},
		{"no queue", awsbackend.Params{Clients: c, Table: res.Table}, "no work queue URL (BATON_QUEUE_URL)"},
		{"no clients", awsbackend.Params{Table: res.Table, QueueURL: res.QueueURL}, "missing SDK clients"},
		{"negative", awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL, MaxReceives: -1}, "must not be negative"},
		{"wait too long", awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL, ReceiveWait: 21 * time.Second}, "receive wait 21s out of 0..20s"},
		{"missing table", awsbackend.Params{Clients: c, Table: uniqueName("absent"), QueueURL: res.QueueURL}, "does not exist (run 'baton setup')"},
		{"missing queue", awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL + "-absent"}, "run 'baton setup'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := awsbackend.Open(t.Context(), tc.p)
			require.ErrorContains(t, err, tc.want)
			if tc.name == "missing table" || tc.name == "missing queue" {
				require.ErrorIs(t, err, awsbackend.ErrNotSetUp)
			}
		})
	}
}

func TestOpenWithoutRedrivePolicy(t *testing.T) {
	t.Parallel()
	c := clients(t)
	res := setUp(t, c, 5)
	out, err := c.SQS.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(uniqueName("plain"))})
	require.NoError(t, err)

	b, err := awsbackend.Open(t.Context(), awsbackend.Params{Clients: c, Table: res.Table, QueueURL: *out.QueueUrl})
	require.NoError(t, err)
	require.Nil(t, b.DeadLetter, "no policy, no dead-letter queue given")
	require.Zero(t, b.MaxReceives)

	b, err = awsbackend.Open(t.Context(), awsbackend.Params{Clients: c, Table: res.Table, QueueURL: *out.QueueUrl, DLQURL: res.DLQURL, MaxReceives: 2})
	require.NoError(t, err)
	require.NotNil(t, b.DeadLetter)
	require.Equal(t, 2, b.MaxReceives)
}

// TestEngineOnAWS runs one tick of the reference job through the engine
// (coordinator, poller, consumers) on DynamoDB and SQS, with a malformed
// message that the consumer must forward to the dead-letter queue.
func TestEngineOnAWS(t *testing.T) {
	t.Parallel()
	c := clients(t)
	res := setUp(t, c, 5)
	b, err := awsbackend.Open(t.Context(), awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL})
	require.NoError(t, err)

	eng, err := exec.New(b, exec.Options{Catalog: fx.Catalog(nil), Consumers: 2, BatchTimeout: 10 * time.Second})
	require.NoError(t, err)
	require.NoError(t, b.Work.SendBatch(t.Context(), []queue.Message{{ID: "malformed", Body: []byte("not a baton message")}}))

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Consume(ctx) })
	defer func() { cancel(); wg.Wait() }()

	at := time.Now()
	sum, err := eng.Trigger(t.Context(), fx.Name, at, false)
	require.NoError(t, err)
	require.Equal(t, 7, sum.Enqueued)
	waitCtx, stop := context.WithTimeout(t.Context(), 20*time.Second)
	defer stop()
	run, items, err := eng.WaitSettled(waitCtx, fx.Name, sum.Nominal, 0)
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, run.State)
	require.Len(t, items, 8)
	for _, it := range items {
		require.Equal(t, ledger.ItemSucceeded, it.State, it.Key.Asset)
		require.Equal(t, 1, it.Attempt, it.Key.Asset)
	}

	// The malformed message is in the dead-letter queue with its reason.
	var dead []queue.Delivery
	require.Eventually(t, func() bool { // on another goroutine: no require inside
		ds, err := b.DeadLetter.Receive(t.Context(), queue.ReceiveParams{Max: queue.MaxBatch, Visibility: time.Minute})
		dead = append(dead, ds...)
		return err == nil && len(dead) > 0
	}, 10*time.Second, 50*time.Millisecond)
	require.Len(t, dead, 1)
	require.Equal(t, "not a baton message", string(dead[0].Body))
	require.Contains(t, dead[0].Attributes[message.AttrError], "malformed")
}
