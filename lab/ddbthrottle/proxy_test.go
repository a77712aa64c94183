package ddbthrottle_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/localaws"
	"github.com/batonhq/baton/lab/ddbthrottle"
)

// clock is a settable clock for the proxy's one-second windows.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type testBundle struct {
	proxy  *ddbthrottle.Proxy
	client *dynamodb.Client
	table  string
	clock  *clock
}

var tableSeq struct {
	sync.Mutex
	n int
}

func setup(t *testing.T, opts ddbthrottle.Options) testBundle {
	t.Helper()
	ep := localaws.DynamoDB(t)
	c := &clock{now: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	opts.Now = c.Now
	p, err := ddbthrottle.New(ep.URL, &opts)
	require.NoError(t, err)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	cfg := ep.Config()
	cfg.BaseEndpoint = aws.String(srv.URL)
	// No retries: each refusal reaches the test.
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	tableSeq.Lock()
	tableSeq.n++
	name := fmt.Sprintf("throttle-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), tableSeq.n)
	tableSeq.Unlock()
	require.NoError(t, awsdynamodb.CreateTable(context.Background(), dynamodb.NewFromConfig(ep.Config()), name))
	return testBundle{proxy: p, client: client, table: name, clock: c}
}

func (b testBundle) put(ctx context.Context, pk, sk string, size int) error {
	_, err := b.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(b.table),
		Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pk},
			"sk": &types.AttributeValueMemberS{Value: sk},
			"v":  &types.AttributeValueMemberS{Value: strings.Repeat("x", size)},
		},
	})
	return err
}

func isThrottle(err error) bool {
	var pte *types.ProvisionedThroughputExceededException
	return errors.As(err, &pte)
}

func TestWritesPastThePartitionLimitAreThrottled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, ddbthrottle.Options{WriteUnits: 20})

	// 20 writes of under 1 KB fill the partition's second.
	for i := range 20 {
		require.NoError(t, b.put(ctx, "HOT", fmt.Sprint(i), 100), "write %d", i)
	}
	err := b.put(ctx, "HOT", "over", 100)
	require.True(t, isThrottle(err), "21st write in one second: %v", err)

	// Another partition key has a budget of its own.
	require.NoError(t, b.put(ctx, "COLD", "a", 100))

	// The next second the partition takes writes again.
	b.clock.Add(time.Second)
	require.NoError(t, b.put(ctx, "HOT", "later", 100))

	// The refused write was not forwarded.
	_, err = b.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(b.table), ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "HOT"}, "sk": &types.AttributeValueMemberS{Value: "over"},
	}})
	require.NoError(t, err)

	st := b.proxy.Stats()
	require.Equal(t, 1, st.Throttles)
	hot := st.Hottest()
	require.Equal(t, "HOT", hot.Key)
	require.Equal(t, 20.0, hot.PeakWriteUnits)
	require.Equal(t, 1, hot.WriteThrottles)
	require.Equal(t, 21.0, hot.WriteUnits)
}

func TestWriteUnitsAreRoundedUpPerKB(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, ddbthrottle.Options{WriteUnits: 10})
	// An item of about 2.5 KB costs 3 units: three fit in 10, the fourth does not.
	for i := range 3 {
		require.NoError(t, b.put(ctx, "P", fmt.Sprint(i), 2500))
	}
	require.True(t, isThrottle(b.put(ctx, "P", "x", 2500)))
	// A small one still fits the last unit.
	require.NoError(t, b.put(ctx, "P", "small", 10))
	require.Equal(t, 10.0, b.proxy.Stats().Hottest().PeakWriteUnits)
}

func TestUpdatesAreChargedToTheirPartition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, ddbthrottle.Options{WriteUnits: 3})
	update := func() error {
		_, err := b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(b.table),
			Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "U"}, "sk": &types.AttributeValueMemberS{Value: "1"}},
			UpdateExpression:          aws.String("SET n = :n"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: "1"}},
		})
		return err
	}
	for range 3 {
		require.NoError(t, update())
	}
	require.True(t, isThrottle(update()))
}

func TestReadsAreChargedByWhatTheyReturn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, ddbthrottle.Options{ReadUnits: 4})
	// Eight items of ~1 KB: one strongly consistent query of the partition
	// returns ~8 KB, 2 read units; an eventually consistent one 1.
	for i := range 8 {
		require.NoError(t, b.put(ctx, "R", fmt.Sprint(i), 1000))
	}
	query := func(consistent bool) error {
		_, err := b.client.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(b.table),
			KeyConditionExpression:    aws.String("#p = :p"),
			ExpressionAttributeNames:  map[string]string{"#p": "pk"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "R"}},
			ConsistentRead:            aws.Bool(consistent),
		})
		return err
	}
	require.NoError(t, query(true))  // 2 units
	require.NoError(t, query(false)) // 3
	require.NoError(t, query(false)) // 4
	require.True(t, isThrottle(query(true)), "a fifth unit in the second")
	st := b.proxy.Stats()
	require.Equal(t, 4.0, st.HottestRead().PeakReadUnits)
	require.Equal(t, "R", st.HottestRead().Key)
	b.clock.Add(time.Second)
	require.NoError(t, query(true))
}

func TestBatchWritesReturnRefusedEntriesAsUnprocessed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, ddbthrottle.Options{WriteUnits: 2})
	req := func(pk, sk string) types.WriteRequest {
		return types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk},
		}}}
	}
	out, err := b.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		b.table: {req("A", "1"), req("A", "2"), req("A", "3"), req("B", "1")},
	}})
	require.NoError(t, err)
	require.Len(t, out.UnprocessedItems[b.table], 1, "the third write of A is over its limit")
	got := out.UnprocessedItems[b.table][0].PutRequest.Item["sk"].(*types.AttributeValueMemberS).Value
	require.Equal(t, "3", got)

	// All refused: the batch itself is throttled.
	_, err = b.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		b.table: {req("A", "4")},
	}})
	require.True(t, isThrottle(err), "%v", err)
}

func TestTheSDKSeesAThrottle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, ddbthrottle.Options{WriteUnits: 1})
	require.NoError(t, b.put(ctx, "S", "1", 10))
	err := b.put(ctx, "S", "2", 10)
	require.Error(t, err)
	// The SDK's standard retryer classifies the refusal as DynamoDB's own
	// throttle, so callers back off and retry as they would on AWS.
	require.Equal(t, aws.TrueTernary, retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err))
}

// A target that does not answer is counted, and the client gets a 502 it
// may retry, not a log line.
func TestUnreachableTargetIsCounted(t *testing.T) {
	t.Parallel()
	gone := httptest.NewServer(nil)
	url := gone.URL
	gone.Close()
	p, err := ddbthrottle.New(url, nil)
	require.NoError(t, err)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"TableName":"t","Key":{"pk":{"S":"a"},"sk":{"S":"b"}}}`))
	require.NoError(t, err)
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.GetItem")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadGateway, resp.StatusCode)
	require.Equal(t, 1, p.Stats().Unreachable)
	p.Reset()
	require.Zero(t, p.Stats().Unreachable)
}
