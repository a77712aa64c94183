package calls

import (
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/awssqs"
	"github.com/batonhq/baton/internal/localaws"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/lab/bench/awscall"
)

// BenchmarkSQSFanOut100 sends 100 messages with SendAll and receives and
// deletes them, on the emulator; it reports the SQS requests per 100
// messages (the figure that carries over to SQS; the time does not).
func BenchmarkSQSFanOut100(b *testing.B) {
	var n awscall.Counter
	c := localaws.SQSClient(b, func(o *sqs.Options) { o.APIOptions = append(o.APIOptions, n.Middleware()) })
	out, err := c.CreateQueue(b.Context(), &sqs.CreateQueueInput{QueueName: aws.String(uniqueName("bench"))})
	require.NoError(b, err)
	q := awssqs.New(c, *out.QueueUrl, nil)
	msgs := make([]queue.Message, 100)
	for i := range msgs {
		msgs[i] = queue.Message{Body: []byte(`{"asset":"A` + strconv.Itoa(i) + `"}`), Attributes: map[string]string{"baton-key": strconv.Itoa(i)}}
	}
	n.Reset()
	b.ResetTimer()
	for b.Loop() {
		_, err := queue.SendAll(b.Context(), q, msgs, nil)
		require.NoError(b, err)
		for got := 0; got < len(msgs); {
			ds, err := q.Receive(b.Context(), queue.ReceiveParams{Max: 10, Visibility: time.Minute})
			require.NoError(b, err)
			for _, d := range ds {
				require.NoError(b, q.Delete(b.Context(), d.ReceiptHandle))
			}
			got += len(ds)
		}
	}
	b.ReportMetric(float64(n.Total())/float64(b.N), "requests/op")
	b.ReportMetric(float64(n.Calls("SendMessageBatch"))/float64(b.N), "sends/op")
}
