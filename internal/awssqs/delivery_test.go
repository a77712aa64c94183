package awssqs

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"
)

func TestDeliveryToleratesMissingSystemAttributes(t *testing.T) {
	t.Parallel()
	good := delivery(types.Message{
		MessageId: aws.String("m1"), ReceiptHandle: aws.String("r1"), Body: aws.String("b"),
		Attributes: map[string]string{"ApproximateReceiveCount": "3", "SentTimestamp": "1763726460000"},
		MessageAttributes: map[string]types.MessageAttributeValue{
			"baton-key": {DataType: aws.String("String"), StringValue: aws.String("k")},
		},
	})
	require.Equal(t, 3, good.ReceiveCount)
	require.Equal(t, time.UnixMilli(1763726460000).UTC(), good.SentAt)
	require.Equal(t, map[string]string{"baton-key": "k"}, good.Attributes)

	bad := delivery(types.Message{
		MessageId: aws.String("m2"), ReceiptHandle: aws.String("r2"), Body: aws.String("b"),
		Attributes: map[string]string{"ApproximateReceiveCount": "many"},
	})
	require.Equal(t, "m2", bad.MessageID, "the message is still delivered")
	require.Zero(t, bad.ReceiveCount, "unknown receive count")
	require.True(t, bad.SentAt.IsZero())
}
