// Package awscall counts the AWS API calls an SDK client makes, by
// operation name, for benchmarks that report requests per unit of work.
//
// A Counter plugs into any aws-sdk-go-v2 client as an API option:
//
//	var n awscall.Counter
//	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
//		o.APIOptions = append(o.APIOptions, n.Middleware())
//	})
//	// … n.Calls("PutItem"), n.Attempts("PutItem"), n.Total()
//
// Calls counts operations invoked (one per client method call, whatever
// the outcome); Attempts counts HTTP requests sent, retries included,
// which is what AWS bills. Operation names are the SDK's ("PutItem",
// "SendMessageBatch"); they do not collide between DynamoDB and SQS, so one
// Counter may serve both clients.
//
// Billed counts requests the way Amazon SQS bills them: every attempt of
// every action is a request (an empty receive too), and each 64 KB chunk
// of its payload is one (a 100 KB batch send is 2 requests). The payload
// is the messages' bodies and attributes, sent (SendMessage,
// SendMessageBatch) or returned (ReceiveMessage).
package awscall

import (
	"context"
	"maps"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
)

// Counter counts calls and attempts per operation. The zero value is ready
// to use; it may be used concurrently. It must not be copied after first use.
type Counter struct {
	mu       sync.Mutex
	calls    map[string]int
	attempts map[string]int
	billed   map[string]int    // attempts, each counted as its payload's 64 KB chunks
	service  map[string]string // the service of each operation seen
}

// Chunk is the payload size SQS bills as one request.
const Chunk = 64 << 10

// sentKey carries a call's sent payload size to its attempts.
type sentKey struct{}

const (
	callsID    = "awscall.Calls"
	attemptsID = "awscall.Attempts"
)

// Middleware returns the API option that counts with c. Adding it to a
// client's APIOptions more than once counts each call once.
func (c *Counter) Middleware() func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		if _, ok := s.Initialize.Get(callsID); !ok {
			err := s.Initialize.Add(middleware.InitializeMiddlewareFunc(callsID,
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					c.add(&c.calls, awsmiddleware.GetOperationName(ctx))
					ctx = middleware.WithStackValue(ctx, sentKey{}, sentPayload(in.Parameters))
					return next.HandleInitialize(ctx, in)
				}), middleware.Before)
			if err != nil {
				return err
			}
		}
		if _, ok := s.Finalize.Get(attemptsID); ok {
			return nil
		}
		attempt := middleware.FinalizeMiddlewareFunc(attemptsID,
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				op := awsmiddleware.GetOperationName(ctx)
				c.add(&c.attempts, op)
				out, md, err := next.HandleFinalize(ctx, in)
				sent, _ := middleware.GetStackValue(ctx, sentKey{}).(int)
				c.bill(awsmiddleware.GetServiceID(ctx), op, max(chunks(sent), chunks(receivedPayload(out.Result))))
				return out, md, err
			})
		// Inside the retry loop, so that every attempt passes through it.
		if _, ok := s.Finalize.Get("Retry"); ok {
			return s.Finalize.Insert(attempt, "Retry", middleware.After)
		}
		return s.Finalize.Add(attempt, middleware.After)
	}
}

func (c *Counter) add(m *map[string]int, op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *m == nil {
		*m = make(map[string]int)
	}
	(*m)[op]++
}

func (c *Counter) bill(service, op string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.billed == nil {
		c.billed, c.service = make(map[string]int), make(map[string]string)
	}
	c.billed[op] += n
	c.service[op] = service
}

// chunks is the requests a payload of size bytes is billed as: one per
// started Chunk, at least one.
func chunks(size int) int {
	return max(1, (size+Chunk-1)/Chunk)
}

// sentPayload is the size of the messages an SQS call sends.
func sentPayload(params any) int {
	n := 0
	switch in := params.(type) {
	case *sqs.SendMessageInput:
		n = len(deref(in.MessageBody)) + attributesSize(in.MessageAttributes)
	case *sqs.SendMessageBatchInput:
		for _, e := range in.Entries {
			n += len(deref(e.MessageBody)) + attributesSize(e.MessageAttributes)
		}
	}
	return n
}

// receivedPayload is the size of the messages an SQS receive returned.
func receivedPayload(result any) int {
	out, ok := result.(*sqs.ReceiveMessageOutput)
	if !ok || out == nil {
		return 0
	}
	n := 0
	for _, m := range out.Messages {
		n += len(deref(m.Body)) + attributesSize(m.MessageAttributes)
	}
	return n
}

// attributesSize is what message attributes add to a message's size:
// each name, type and value.
func attributesSize(attrs map[string]sqstypes.MessageAttributeValue) int {
	n := 0
	for k, v := range attrs {
		n += len(k) + len(deref(v.DataType)) + len(deref(v.StringValue)) + len(v.BinaryValue)
	}
	return n
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Billed is the requests service (an SDK service ID: "SQS", "DynamoDB")
// was sent so far as SQS bills them: every attempt, each counted as the
// 64 KB chunks of its payload (at least 1). For a service other than SQS
// no payload is measured and it is its attempts.
func (c *Counter) Billed(service string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for op, b := range c.billed {
		if c.service[op] == service {
			n += b
		}
	}
	return n
}

// Calls is the number of calls of the operation so far.
func (c *Counter) Calls(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[op]
}

// Attempts is the number of HTTP requests sent for the operation so far.
func (c *Counter) Attempts(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.attempts[op]
}

// Snapshot returns the calls per operation so far.
func (c *Counter) Snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.calls)
}

// Total is the number of calls of all operations so far.
func (c *Counter) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.calls {
		n += v
	}
	return n
}

// Reset forgets every count.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls, c.attempts, c.billed, c.service = nil, nil, nil, nil
}
