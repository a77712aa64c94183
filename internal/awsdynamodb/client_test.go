package awsdynamodb_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/batonhq/baton/internal/awsdynamodb"
)

// recorder wraps a client: it counts calls by operation and, when LoseFunc
// says so, performs a write and then returns a transport error instead of
// the response, as when a connection drops after the request was sent; when
// DupFunc says so, it sends a write twice and returns the second response,
// as the SDK's retryer does when the first response was lost.
type recorder struct {
	api awsdynamodb.API

	mu     sync.Mutex
	counts map[string]int
	// LoseFunc is asked before each write (PutItem, UpdateItem), with the
	// operation's name; true loses that write's response.
	LoseFunc func(op string) bool
	// DupFunc is asked before each write; true sends it twice.
	DupFunc func(op string) bool
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

func (r *recorder) before(op string) (lose, dup bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[op]++
	if r.FailFunc != nil {
		if err := r.FailFunc(op); err != nil {
			return false, false, err
		}
	}
	return r.LoseFunc != nil && r.LoseFunc(op), r.DupFunc != nil && r.DupFunc(op), nil
}

// Counts returns the calls made so far by operation, and resets them.
// reset forgets the calls counted so far.
func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts = map[string]int{}
}

func (r *recorder) Counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.counts
	r.counts = map[string]int{}
	return c
}

func (r *recorder) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if _, _, err := r.before("GetItem"); err != nil {
		return nil, err
	}
	return r.api.GetItem(ctx, in, o...)
}

func (r *recorder) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if _, _, err := r.before("Query"); err != nil {
		return nil, err
	}
	return r.api.Query(ctx, in, o...)
}

func (r *recorder) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	lose, dup, err := r.before("PutItem")
	if err != nil {
		return nil, err
	}
	if dup {
		_, _ = r.api.PutItem(ctx, in, o...)
	}
	out, err := r.api.PutItem(ctx, in, o...)
	if lose {
		return nil, errLost
	}
	return out, err
}

func (r *recorder) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	lose, dup, err := r.before("UpdateItem")
	if err != nil {
		return nil, err
	}
	if dup {
		_, _ = r.api.UpdateItem(ctx, in, o...)
	}
	out, err := r.api.UpdateItem(ctx, in, o...)
	if lose {
		return nil, errLost
	}
	return out, err
}

// allOld makes a server that does not return the old record with a failed
// condition behave as DynamoDB does (ReturnValuesOnConditionCheckFailure
// ALL_OLD): it reads the record itself, out of sight of a recorder wrapped
// around it, and puts it in the error.
type allOld struct {
	awsdynamodb.API
	table string
}

func (a allOld) withOld(ctx context.Context, key map[string]types.AttributeValue, err error) error {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) || len(ccf.Item) > 0 {
		return err
	}
	out, gerr := a.API.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(a.table), Key: key, ConsistentRead: aws.Bool(true)})
	if gerr != nil {
		return err
	}
	return &types.ConditionalCheckFailedException{Message: ccf.Message, Item: out.Item}
}

func (a allOld) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := a.API.UpdateItem(ctx, in, o...)
	return out, a.withOld(ctx, in.Key, err)
}

func (a allOld) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := a.API.PutItem(ctx, in, o...)
	return out, a.withOld(ctx, map[string]types.AttributeValue{"pk": in.Item["pk"], "sk": in.Item["sk"]}, err)
}
