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
package awscall

import (
	"context"
	"maps"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Counter counts calls and attempts per operation. The zero value is ready
// to use; it may be used concurrently. It must not be copied after first use.
type Counter struct {
	mu       sync.Mutex
	calls    map[string]int
	attempts map[string]int
}

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
				c.add(&c.attempts, awsmiddleware.GetOperationName(ctx))
				return next.HandleFinalize(ctx, in)
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
	c.calls, c.attempts = nil, nil
}
