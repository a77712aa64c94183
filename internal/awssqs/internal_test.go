package awssqs

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/queue"
)

func TestTranslateError(t *testing.T) {
	t.Parallel()
	generic := func(code string) error {
		return &smithy.OperationError{ServiceID: "SQS", OperationName: "Op", Err: &smithy.GenericAPIError{Code: code, Message: "m"}}
	}
	cases := []struct {
		name string
		err  error
		want error // nil: passes through unchanged
	}{
		{"typed queue missing", &types.QueueDoesNotExist{}, queue.ErrNotFound},
		{"legacy queue missing", generic("AWS.SimpleQueueService.NonExistentQueue"), queue.ErrNotFound},
		{"json queue missing", generic("QueueDoesNotExist"), queue.ErrNotFound},
		{"typed receipt", &types.ReceiptHandleIsInvalid{}, queue.ErrInvalidReceipt},
		{"invalid receipt", generic("InvalidReceiptHandle"), queue.ErrInvalidReceipt},
		{"not in flight", generic("AWS.SimpleQueueService.MessageNotInflight"), queue.ErrInvalidReceipt},
		{"typed too many", &types.TooManyEntriesInBatchRequest{}, queue.ErrBatchTooLarge},
		{"legacy too many", generic("AWS.SimpleQueueService.TooManyEntriesInBatchRequest"), queue.ErrBatchTooLarge},
		{"too long", generic("AWS.SimpleQueueService.BatchRequestTooLong"), queue.ErrBatchTooLarge},
		{"empty", generic("AWS.SimpleQueueService.EmptyBatchRequest"), queue.ErrBatchTooLarge},
		{"ids not distinct", &types.BatchEntryIdsNotDistinct{}, queue.ErrBatchTooLarge},
		{"name taken", generic("QueueAlreadyExists"), errQueueExists},
		{"throttled", generic("RequestThrottled"), nil},
		{"not an API error", errors.New("dial tcp: refused"), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := translateError(c.err)
			if c.want == nil {
				require.Same(t, c.err, got)
				return
			}
			require.ErrorIs(t, got, c.want)
			require.ErrorIs(t, got, c.err, "the SDK error stays in the chain")
			for _, other := range []error{queue.ErrNotFound, queue.ErrInvalidReceipt, queue.ErrBatchTooLarge, errQueueExists} {
				if other != c.want {
					require.NotErrorIs(t, got, other)
				}
			}
		})
	}
	require.NoError(t, translateError(nil))
}

func TestSeconds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   time.Duration
		want int32
	}{
		{-time.Second, 0}, {0, 0}, {time.Nanosecond, 1}, {time.Second, 1},
		{1500 * time.Millisecond, 2}, {30 * time.Second, 30}, {MaxVisibility, 43200},
	}
	for _, c := range cases {
		got, err := seconds(c.in)
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, got, c.in)
	}
	_, err := seconds(MaxVisibility + time.Nanosecond)
	require.Error(t, err)
}

func TestWaitSeconds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   time.Duration
		want int32
	}{
		{-time.Second, 0}, {0, 0}, {999 * time.Millisecond, 0}, {time.Second, 1},
		{2900 * time.Millisecond, 2}, {20 * time.Second, 20}, {time.Hour, 20},
	}
	for _, c := range cases {
		require.Equal(t, c.want, waitSeconds(c.in), c.in)
	}
}

func TestSQSText(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"", `{"a":1}`, "tab\tnl\ncr\r", "é€😀", "\uE000\uFFFD"} {
		require.True(t, sqsText([]byte(ok)), "%q", ok)
	}
	for _, bad := range []string{"\x00", "a\x1fb", "\xff", "\uFFFE", "\xed\xa0\x80"} {
		require.False(t, sqsText([]byte(bad)), "%q", bad)
	}
}

func TestDeleteFailures(t *testing.T) {
	t.Parallel()
	handles := []string{"h0", "h1", "h2", "h3"}
	out := &sqs.DeleteMessageBatchOutput{
		Successful: []types.DeleteMessageBatchResultEntry{{Id: aws.String("0")}, {Id: aws.String("3")}},
		Failed: []types.BatchResultErrorEntry{
			{Id: aws.String("1"), Code: aws.String("ReceiptHandleIsInvalid"), Message: aws.String("bad"), SenderFault: true},
		},
	}
	failed := deleteFailures(handles, out)
	require.Len(t, failed, 2)
	require.Equal(t, "h1", failed[0].ID)
	require.ErrorIs(t, failed[0].Err, queue.ErrInvalidReceipt)
	require.ErrorContains(t, failed[0].Err, "bad")
	require.Equal(t, "h2", failed[1].ID, "reported neither way")
	require.NotErrorIs(t, failed[1].Err, queue.ErrInvalidReceipt)

	out.Failed = []types.BatchResultErrorEntry{{Id: aws.String("1"), Code: aws.String("InternalError")}}
	out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: aws.String("2")})
	failed = deleteFailures(handles, out)
	require.Len(t, failed, 1)
	require.NotErrorIs(t, failed[0].Err, queue.ErrInvalidReceipt)
	require.Empty(t, deleteFailures(handles[:1], &sqs.DeleteMessageBatchOutput{Successful: out.Successful[:1]}))
}
