package awsdynamodb_test

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/batonhq/baton/internal/awsdynamodb"
)

// recorder wraps a client: it counts calls by operation and, when LoseFunc
// says so, performs a write and then returns a transport error instead of
// the response, as when a connection drops after the request was sent.
type recorder struct {
	api awsdynamodb.API

	mu     sync.Mutex
	counts map[string]int
	// LoseFunc is asked before each write (PutItem, UpdateItem), with the
	// operation's name; true loses that write's response.
	LoseFunc func(op string) bool
	// FailFunc is asked before each call; a non-nil error is returned
	// without performing the call.
	FailFunc func(op string) error
}

var _ awsdynamodb.API = (*recorder)(nil)

func newRecorder(api awsdynamodb.API) *recorder {
	return &recorder{api: api, counts: map[string]int{}}
}

// errLost is what a write whose response was lost returns.
var errLost = fmt.Errorf("operation error DynamoDB: read response body: %w", io.ErrUnexpectedEOF)

func (r *recorder) before(op string) (lose bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[op]++
	if r.FailFunc != nil {
		if err := r.FailFunc(op); err != nil {
			return false, err
		}
	}
	return r.LoseFunc != nil && r.LoseFunc(op), nil
}

// Counts returns the calls made so far by operation, and resets them.
func (r *recorder) Counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.counts
	r.counts = map[string]int{}
	return c
}

func (r *recorder) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if _, err := r.before("GetItem"); err != nil {
		return nil, err
	}
	return r.api.GetItem(ctx, in, o...)
}

func (r *recorder) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if _, err := r.before("Query"); err != nil {
		return nil, err
	}
	return r.api.Query(ctx, in, o...)
}

func (r *recorder) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	lose, err := r.before("PutItem")
	if err != nil {
		return nil, err
	}
	out, err := r.api.PutItem(ctx, in, o...)
	if lose {
		return nil, errLost
	}
	return out, err
}

func (r *recorder) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	lose, err := r.before("UpdateItem")
	if err != nil {
		return nil, err
	}
	out, err := r.api.UpdateItem(ctx, in, o...)
	if lose {
		return nil, errLost
	}
	return out, err
}
