package lambdaapp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/batonhq/baton/internal/lambdaevent"
	"github.com/batonhq/baton/internal/queue"
)

// EventSource invokes a consumer function's handler with the batches a
// poller receives, the way Lambda's SQS event source does with
// ReportBatchItemFailures: one invocation per batch, the batch as an
// events.SQSEvent through the handler's JSON path, the batch-item failures
// read from its response. Its Handle is a poller.HandlerFunc, so that a
// poller and an EventSource stand in for the managed event source outside
// Lambda (tests, a worker against SQS).
type EventSource struct {
	// Handler is the function's handler: lambda.NewHandler(h.Handle) for
	// a *ConsumerHandler.
	Handler lambda.Handler
	// QueueARN and Region fill the records' eventSourceARN and awsRegion.
	QueueARN string
	Region   string
	Logger   *slog.Logger // nil: discard
}

// Handle invokes the handler once with msgs under ctx, whose deadline is
// the invocation's (the poller gives each batch its own), in a
// lambdacontext with a fresh request id. It returns the ids of the
// messages to leave in the queue: those the response lists, or every
// message of the batch when the invocation failed (an error, a panic, a
// response that does not decode) or the response names an identifier that
// is not one of the batch's messages, as Lambda does.
func (s *EventSource) Handle(ctx context.Context, deadline time.Time, msgs []queue.Delivery) []string {
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	id := NewRequestID()
	failed, err := s.invoke(lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: id}), msgs)
	if err == nil {
		return failed
	}
	log.WarnContext(ctx, "batch failed as a whole", slog.String("phase", "event-source"),
		slog.String("request_id", id), slog.Int("messages", len(msgs)), slog.Any("error", err))
	all := make([]string, len(msgs))
	for i, m := range msgs {
		all[i] = m.MessageID
	}
	return all
}

func (s *EventSource) invoke(ctx context.Context, msgs []queue.Delivery) (failed []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			failed, err = nil, fmt.Errorf("handler panicked: %v", r)
		}
	}()
	payload, err := json.Marshal(lambdaevent.SQSEvent(lambdaevent.SQSEventParams{
		QueueARN: s.QueueARN, Region: s.Region, Messages: msgs,
	}))
	if err != nil {
		return nil, fmt.Errorf("encode event: %w", err)
	}
	out, err := s.Handler.Invoke(ctx, payload)
	if err != nil {
		return nil, fmt.Errorf("handler: %w", err)
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, fmt.Errorf("response %q is not a batch response: %w", out, err)
	}
	inBatch := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		inBatch[m.MessageID] = true
	}
	for _, f := range resp.BatchItemFailures {
		if !inBatch[f.ItemIdentifier] {
			return nil, fmt.Errorf("response names item %q, not a message of the batch", f.ItemIdentifier)
		}
		failed = append(failed, f.ItemIdentifier)
	}
	return failed, nil
}

// NewRequestID returns a random version 4 UUID, the form of Lambda's
// request ids.
func NewRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
