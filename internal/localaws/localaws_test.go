package localaws_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/localaws"
)

var seq atomic.Int64

// uniqueName returns a name no other test in this binary uses.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e9, seq.Add(1))
}

func TestEndpointsAreSharedAndLoopback(t *testing.T) {
	t.Parallel()
	a, b := localaws.DynamoDB(t), localaws.DynamoDB(t)
	require.Equal(t, a.URL, b.URL)
	require.Regexp(t, `^http://127\.0\.0\.1:\d+$`, a.URL)
	require.Equal(t, "us-east-1", a.Region)
	s := localaws.SQS(t)
	require.Regexp(t, `^http://127\.0\.0\.1:\d+$`, s.URL)
	require.NotEqual(t, a.URL, s.URL)
	creds, err := s.Credentials.Retrieve(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, creds.AccessKeyID)
}

func createTable(t *testing.T, c *dynamodb.Client) string {
	t.Helper()
	name := uniqueName("tbl")
	_, err := c.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
	})
	require.NoError(t, err)
	// CREATING for one event-loop turn of the server, not 500 ms.
	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 10*time.Millisecond, 100*time.Millisecond
	})
	require.NoError(t, w.Wait(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 5*time.Second))
	return name
}

func TestDynamoDBPutGet(t *testing.T) {
	t.Parallel()
	c := localaws.DynamoDBClient(t)
	table := createTable(t, c)
	_, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item: map[string]ddbtypes.AttributeValue{
			"pk": &ddbtypes.AttributeValueMemberS{Value: "job#a"},
			"n":  &ddbtypes.AttributeValueMemberN{Value: "7"},
		},
	})
	require.NoError(t, err)
	got, err := c.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "job#a"}},
		ConsistentRead: aws.Bool(true),
	})
	require.NoError(t, err)
	require.Equal(t, &ddbtypes.AttributeValueMemberN{Value: "7"}, got.Item["n"])
}

// TestDynamoDBConditionFailureReturnsNoItem pins a dynalite gap: it ignores
// ReturnValuesOnConditionCheckFailure, so a failed conditional write does
// not carry the current item. Adapters must read it separately. If this
// test fails, dynalite learned the feature: update the docs.
func TestDynamoDBConditionFailureReturnsNoItem(t *testing.T) {
	t.Parallel()
	c := localaws.DynamoDBClient(t)
	table := createTable(t, c)
	item := map[string]ddbtypes.AttributeValue{
		"pk":    &ddbtypes.AttributeValueMemberS{Value: "k"},
		"owner": &ddbtypes.AttributeValueMemberS{Value: "a"},
	}
	_, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item})
	require.NoError(t, err)

	_, err = c.PutItem(t.Context(), &dynamodb.PutItemInput{
		TableName:                           aws.String(table),
		Item:                                item,
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *ddbtypes.ConditionalCheckFailedException
	require.ErrorAs(t, err, &ccf)
	require.Nil(t, ccf.Item, "dynalite returns no item on a failed condition")
}

func TestDynamoDBConditionalUpdateReturnsAllNew(t *testing.T) {
	t.Parallel()
	c := localaws.DynamoDBClient(t)
	table := createTable(t, c)
	key := map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "lease#job"}}
	update := func(fence string) (*dynamodb.UpdateItemOutput, error) {
		return c.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{
			TableName:           aws.String(table),
			Key:                 key,
			UpdateExpression:    aws.String("SET fence = if_not_exists(fence, :zero) + :one"),
			ConditionExpression: aws.String("attribute_not_exists(fence) OR fence = :want"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
				":zero": &ddbtypes.AttributeValueMemberN{Value: "0"},
				":one":  &ddbtypes.AttributeValueMemberN{Value: "1"},
				":want": &ddbtypes.AttributeValueMemberN{Value: fence},
			},
			ReturnValues: ddbtypes.ReturnValueAllNew,
		})
	}
	out, err := update("0")
	require.NoError(t, err)
	require.Equal(t, &ddbtypes.AttributeValueMemberN{Value: "1"}, out.Attributes["fence"])
	out, err = update("1")
	require.NoError(t, err)
	require.Equal(t, &ddbtypes.AttributeValueMemberN{Value: "2"}, out.Attributes["fence"])

	_, err = update("1") // stale fence
	var ccf *ddbtypes.ConditionalCheckFailedException
	require.ErrorAs(t, err, &ccf)
}

// TestDynamoDBUnsupportedOperations pins what dynalite does not implement:
// transactions and UpdateTimeToLive.
func TestDynamoDBUnsupportedOperations(t *testing.T) {
	t.Parallel()
	c := localaws.DynamoDBClient(t)
	table := createTable(t, c)
	_, err := c.TransactWriteItems(t.Context(), &dynamodb.TransactWriteItemsInput{
		TransactItems: []ddbtypes.TransactWriteItem{{Put: &ddbtypes.Put{
			TableName: aws.String(table),
			Item:      map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "x"}},
		}}},
	})
	requireAPIError(t, err, "UnknownOperationException")

	_, err = c.UpdateTimeToLive(t.Context(), &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(table),
		TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)},
	})
	requireAPIError(t, err, "UnknownOperationException")
}

func requireAPIError(t *testing.T, err error, code string) {
	t.Helper()
	var ae smithy.APIError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, code, ae.ErrorCode(), ae.ErrorMessage())
}

func createQueue(t *testing.T, c *sqs.Client, attrs map[string]string) string {
	t.Helper()
	out, err := c.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(uniqueName("q")), Attributes: attrs})
	require.NoError(t, err)
	return *out.QueueUrl
}

func TestSQSSendReceiveDelete(t *testing.T) {
	t.Parallel()
	c := localaws.SQSClient(t)
	url := createQueue(t, c, nil)
	_, err := c.SendMessage(t.Context(), &sqs.SendMessageInput{
		QueueUrl:    aws.String(url),
		MessageBody: aws.String(`{"asset":"EURUSD"}`),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			"run": {DataType: aws.String("String"), StringValue: aws.String("r1")},
		},
	})
	require.NoError(t, err)

	out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
		QueueUrl:              aws.String(url),
		MaxNumberOfMessages:   10,
		MessageAttributeNames: []string{"All"},
		AttributeNames:        []sqstypes.QueueAttributeName{"ApproximateReceiveCount", "SentTimestamp"},
	})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1)
	m := out.Messages[0]
	require.JSONEq(t, `{"asset":"EURUSD"}`, *m.Body)
	require.Equal(t, "r1", *m.MessageAttributes["run"].StringValue)
	require.Equal(t, "1", m.Attributes["ApproximateReceiveCount"])
	sent, err := strconv.ParseInt(m.Attributes["SentTimestamp"], 10, 64)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), time.UnixMilli(sent), time.Minute)

	_, err = c.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
	require.NoError(t, err)
	requireDepth(t, c, url, 0, 0)
}

// TestSQSSystemAttributeNamesIgnored pins a local-aws-sqs gap: it reads the
// deprecated AttributeNames of ReceiveMessage and ignores
// MessageSystemAttributeNames. Clients that need system attributes from
// both the emulator and SQS send both lists.
func TestSQSSystemAttributeNamesIgnored(t *testing.T) {
	t.Parallel()
	c := localaws.SQSClient(t)
	url := createQueue(t, c, nil)
	sendN(t, c, url, 1)
	out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"ApproximateReceiveCount"},
	})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1)
	require.Empty(t, out.Messages[0].Attributes)
}

func sendN(t *testing.T, c *sqs.Client, url string, n int) {
	t.Helper()
	entries := make([]sqstypes.SendMessageBatchRequestEntry, n)
	for i := range entries {
		entries[i] = sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String("m" + strconv.Itoa(i))}
	}
	out, err := c.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	require.NoError(t, err)
	require.Empty(t, out.Failed)
	require.Len(t, out.Successful, n)
}

func receive(t *testing.T, c *sqs.Client, url string, visibility int32) []sqstypes.Message {
	t.Helper()
	out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(url),
		MaxNumberOfMessages: 10,
		VisibilityTimeout:   visibility,
		AttributeNames:      []sqstypes.QueueAttributeName{"All"},
	})
	require.NoError(t, err)
	return out.Messages
}

func requireDepth(t *testing.T, c *sqs.Client, url string, visible, inFlight int) {
	t.Helper()
	out, err := c.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"},
	})
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(visible), out.Attributes["ApproximateNumberOfMessages"], "ApproximateNumberOfMessages")
	require.Equal(t, strconv.Itoa(inFlight), out.Attributes["ApproximateNumberOfMessagesNotVisible"], "ApproximateNumberOfMessagesNotVisible")
}

func TestSQSBatchEntryFailure(t *testing.T) {
	t.Parallel()
	c := localaws.SQSClient(t)
	url := createQueue(t, c, nil)
	out, err := c.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{
		QueueUrl: aws.String(url),
		Entries: []sqstypes.SendMessageBatchRequestEntry{
			{Id: aws.String("ok"), MessageBody: aws.String("fine")},
			{Id: aws.String("bad"), MessageBody: aws.String("x"), MessageAttributes: map[string]sqstypes.MessageAttributeValue{
				"AWS.reserved": {DataType: aws.String("String"), StringValue: aws.String("v")},
			}},
		},
	})
	require.NoError(t, err)
	require.Len(t, out.Successful, 1)
	require.Equal(t, "ok", *out.Successful[0].Id)
	require.Len(t, out.Failed, 1)
	require.Equal(t, "bad", *out.Failed[0].Id)
	require.True(t, out.Failed[0].SenderFault)

	_, err = c.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: make11()})
	var tooMany *sqstypes.TooManyEntriesInBatchRequest
	require.ErrorAs(t, err, &tooMany)
}

func make11() []sqstypes.SendMessageBatchRequestEntry {
	e := make([]sqstypes.SendMessageBatchRequestEntry, 11)
	for i := range e {
		e[i] = sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String("m")}
	}
	return e
}

func TestSQSVisibilityAndReceiveCount(t *testing.T) {
	t.Parallel()
	c := localaws.SQSClient(t)
	url := createQueue(t, c, nil)
	sendN(t, c, url, 1)

	first := receive(t, c, url, 1)
	require.Len(t, first, 1)
	require.Equal(t, "1", first[0].Attributes["ApproximateReceiveCount"])
	require.Empty(t, receive(t, c, url, 60), "hidden while in flight")
	requireDepth(t, c, url, 1, 1) // the emulator counts in-flight messages in ApproximateNumberOfMessages

	// Visible again once the 1 s visibility timeout runs out (server clock).
	var second []sqstypes.Message
	require.Eventually(t, func() bool {
		second = receive(t, c, url, 60)
		return len(second) == 1
	}, 5*time.Second, 50*time.Millisecond)
	require.Equal(t, first[0].MessageId, second[0].MessageId)
	require.Equal(t, "2", second[0].Attributes["ApproximateReceiveCount"])
	require.NotEqual(t, *first[0].ReceiptHandle, *second[0].ReceiptHandle)

	// A stale receipt handle still works here (SQS ignores or rejects it).
	_, err := c.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(url), ReceiptHandle: first[0].ReceiptHandle, VisibilityTimeout: 60,
	})
	require.NoError(t, err)
	_, err = c.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: first[0].ReceiptHandle})
	require.NoError(t, err)
	requireDepth(t, c, url, 0, 0) // deleted through the stale handle

	// Once the message is gone, ChangeMessageVisibility rejects the handle;
	// DeleteMessage does not.
	_, err = c.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(url), ReceiptHandle: second[0].ReceiptHandle, VisibilityTimeout: 0,
	})
	var invalid *sqstypes.ReceiptHandleIsInvalid
	require.ErrorAs(t, err, &invalid)
	_, err = c.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: second[0].ReceiptHandle})
	require.NoError(t, err)

	// A handle that is not one of this queue's is rejected by both.
	_, err = c.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String("garbage")})
	require.ErrorAs(t, err, &invalid)
}

// TestSQSChangeVisibilityDoesNotCount checks the launcher's fix to
// local-aws-sqs 2.0.2, which increments ApproximateReceiveCount on every
// ChangeMessageVisibility (so visibility changes counted towards a redrive
// policy's maxReceiveCount). On SQS, and with the fix, only receives count.
func TestSQSChangeVisibilityDoesNotCount(t *testing.T) {
	t.Parallel()
	c := localaws.SQSClient(t)
	url := createQueue(t, c, nil)
	sendN(t, c, url, 1)
	got := receive(t, c, url, 60)
	require.Len(t, got, 1)
	require.Equal(t, "1", got[0].Attributes["ApproximateReceiveCount"])
	for _, vis := range []int32{30, 0} {
		_, err := c.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(url), ReceiptHandle: got[0].ReceiptHandle, VisibilityTimeout: vis,
		})
		require.NoError(t, err)
	}
	got = receive(t, c, url, 60)
	require.Len(t, got, 1)
	require.Equal(t, "2", got[0].Attributes["ApproximateReceiveCount"])
}

func TestSQSRedriveToDLQ(t *testing.T) {
	t.Parallel()
	c := localaws.SQSClient(t)
	dlq := createQueue(t, c, nil)
	attrs, err := c.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(dlq), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	require.NoError(t, err)
	arn := attrs.Attributes["QueueArn"]
	require.Contains(t, arn, "arn:aws:sqs:us-east-1:123456789012:")
	url := createQueue(t, c, map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"2"}`, arn),
	})
	_, err = c.SendMessage(t.Context(), &sqs.SendMessageInput{
		QueueUrl: aws.String(url), MessageBody: aws.String("poison"),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{"k": {DataType: aws.String("String"), StringValue: aws.String("v")}},
	})
	require.NoError(t, err)

	// Two receives, each left to time out after 1 s.
	got := receive(t, c, url, 1)
	require.Len(t, got, 1)
	id := *got[0].MessageId
	require.Eventually(t, func() bool {
		got = receive(t, c, url, 1)
		return len(got) == 1
	}, 5*time.Second, 50*time.Millisecond)
	require.Equal(t, "2", got[0].Attributes["ApproximateReceiveCount"])

	// After the second timeout the message is in the DLQ, not the queue.
	var out *sqs.ReceiveMessageOutput
	require.Eventually(t, func() bool {
		out, err = c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(dlq), MessageAttributeNames: []string{"All"},
			AttributeNames: []sqstypes.QueueAttributeName{"All"},
		})
		require.NoError(t, err)
		return len(out.Messages) == 1
	}, 5*time.Second, 50*time.Millisecond)
	require.Empty(t, receive(t, c, url, 60))
	m := out.Messages[0]
	require.Equal(t, id, *m.MessageId, "the message keeps its id in the DLQ")
	require.Equal(t, "poison", *m.Body)
	require.Equal(t, "v", *m.MessageAttributes["k"].StringValue)
	require.Equal(t, "1", m.Attributes["ApproximateReceiveCount"], "the count restarts in the DLQ")
	require.Equal(t, strings.Replace(arn, ":"+lastSegment(dlq), ":"+lastSegment(url), 1), m.Attributes["DeadLetterQueueSourceArn"])
}

func lastSegment(url string) string { return url[strings.LastIndex(url, "/")+1:] }

func TestSQSQueueDoesNotExist(t *testing.T) {
	t.Parallel()
	c := localaws.SQSClient(t)
	ep := localaws.SQS(t)
	_, err := c.SendMessage(t.Context(), &sqs.SendMessageInput{
		QueueUrl: aws.String(ep.URL + "/123456789012/" + uniqueName("missing")), MessageBody: aws.String("x"),
	})
	var missing *sqstypes.QueueDoesNotExist
	require.ErrorAs(t, err, &missing)
	var ae smithy.APIError
	require.True(t, errors.As(err, &ae))
	t.Logf("QueueDoesNotExist code: %q", ae.ErrorCode())
}

// TestSQSLongPollAnswersWithTheFirstMessages pins a fix the launcher makes
// to local-aws-sqs (see infra/local/README.md): a long poll answers as soon
// as it holds a message, as SQS does, instead of keeping it for the whole
// wait until it holds MaxNumberOfMessages.
func TestSQSLongPollAnswersWithTheFirstMessages(t *testing.T) {
	t.Parallel()
	c := localaws.SQSClient(t)
	url := createQueue(t, c, nil)
	sendN(t, c, url, 1)
	// One message of the ten asked for, with a wait of 20 s: SQS answers at
	// once (the package as shipped kept it for the whole wait, past this
	// context's end).
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 20})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1)

	// An empty queue: the long poll waits, and answers with a message sent
	// meanwhile.
	got := make(chan int, 1)
	go func() {
		out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 20})
		if err != nil {
			got <- -1
			return
		}
		got <- len(out.Messages)
	}()
	time.Sleep(300 * time.Millisecond) // the receive is waiting by now
	sendN(t, c, url, 1)
	require.Equal(t, 1, <-got)
}
