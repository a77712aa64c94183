package awsdynamodb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// API is the part of the DynamoDB client the stores use. *dynamodb.Client
// implements it; tests wrap it to count calls or inject failures.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Options tune the stores. A nil *Options is the zero value, which is usable.
type Options struct {
	// Retention is how long finished runs and terminal items are kept: their
	// ttl attribute is set to the time they finished plus Retention, after
	// which DynamoDB's TTL may delete them (it may lag by days; nothing
	// decides on ttl). 0 means DefaultRetention; a negative value sets no
	// ttl, keeping records forever.
	Retention time.Duration

	// ResolveTimeout bounds the consistent read that resolves a write whose
	// outcome is unknown (a transport error or timeout after the request was
	// sent). The read runs even when the caller's context is done, so that
	// the outcome is known before the error is returned. 0 means 5s.
	ResolveTimeout time.Duration

	// ShardsPerPartition is how many shards of a run's items (64 items
	// each) share one partition key: a generation opened with more
	// shards spreads its items over ceil(shards/ShardsPerPartition)
	// partition keys (see the package doc). 0 means
	// DefaultShardsPerPartition. It applies to generations opened from
	// then on; the count of each is stored with its run.
	ShardsPerPartition int
}

// DefaultRetention is the retention of finished runs and terminal items
// when Options.Retention is 0.
const DefaultRetention = 30 * 24 * time.Hour

// table is what the three stores share: the client, the table name and the
// options, and the conditional-write machinery.
type table struct {
	client         API
	name           string
	retention      time.Duration
	resolveTimeout time.Duration
	shardsPerPart  int
}

func newTable(client API, name string, o *Options) table {
	t := table{client: client, name: name, retention: DefaultRetention, resolveTimeout: 5 * time.Second, shardsPerPart: DefaultShardsPerPartition}
	if o != nil {
		if o.ShardsPerPartition > 0 {
			t.shardsPerPart = o.ShardsPerPartition
		}
		if o.Retention != 0 {
			t.retention = o.Retention
		}
		if o.ResolveTimeout > 0 {
			t.resolveTimeout = o.ResolveTimeout
		}
	}
	return t
}

// expiry returns the ttl attribute value for a record that finished at
// finished, and false when records are kept forever.
func (t table) expiry(finished time.Time) (types.AttributeValue, bool) {
	if t.retention < 0 {
		return nil, false
	}
	return num(finished.Add(t.retention).Unix()), true
}

// get reads the record at k with a strongly consistent GetItem. It returns
// nil, nil when there is none.
func (t table) get(ctx context.Context, op string, k key) (record, error) {
	out, err := t.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(t.name),
		Key:            k.attrs(),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, translateError(t.name, op, err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// update describes one conditional UpdateItem. Every attribute is named by
// a "#name" placeholder (see names); values are ":name" placeholders, and
// values may hold more than the expressions use (see used). The write
// token's placeholder is ":tok"; set clauses may use it too.
type update struct {
	set    []string // "#a = :a" clauses
	remove []string // "#a" clauses
	add    []string // "#a :n" clauses: a number attribute plus n, n when absent
	cond   string
	values record
}

// expression returns the UpdateExpression of u with the write token set.
func (u update) expression() string {
	var b strings.Builder
	b.WriteString("SET ")
	b.WriteString(strings.Join(append(u.set[:len(u.set):len(u.set)], "#"+attrToken+" = :"+attrToken), ", "))
	if len(u.remove) > 0 {
		b.WriteString(" REMOVE ")
		b.WriteString(strings.Join(u.remove, ", "))
	}
	if len(u.add) > 0 {
		b.WriteString(" ADD ")
		b.WriteString(strings.Join(u.add, ", "))
	}
	return b.String()
}

// raceRetries bounds how often a write is retried when its condition
// failed but the record read back no longer explains the failure: it
// changed between the write and the read, which happens only on a server
// that does not return the old record with the failed condition, under
// contention. (A forced OpenRun also retries when the generation it read
// changed before its write.) Each retry is a fresh decision on a newer
// record, so the retries end as soon as the contention does.
const raceRetries = 16

// written is the outcome of a conditional write.
type written struct {
	// applied: the write took effect, rec is the record after it.
	// Otherwise the condition failed and rec is the record that failed it
	// (nil: there is no record).
	applied bool
	rec     record
}

// update performs u on k as one UpdateItem returning the new record, or on
// a failed condition the current one.
func (t table) update(ctx context.Context, op string, k key, u update) (written, error) {
	tok := newToken()
	expr := u.expression()
	values := used(u.values, expr, u.cond)
	values[":"+attrToken] = str(tok)
	in := &dynamodb.UpdateItemInput{
		TableName:                           aws.String(t.name),
		Key:                                 k.attrs(),
		UpdateExpression:                    aws.String(expr),
		ConditionExpression:                 aws.String(u.cond),
		ExpressionAttributeNames:            names(expr, u.cond),
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	return t.conditional(ctx, op, k, tok, func(ctx context.Context) (record, error) {
		out, err := t.client.UpdateItem(ctx, in)
		if err != nil {
			return nil, err
		}
		return out.Attributes, nil
	})
}

// put writes rec at k as one conditional PutItem.
func (t table) put(ctx context.Context, op string, k key, rec record, cond string, values record) (written, error) {
	tok := newToken()
	item := make(record, len(rec)+3)
	for n, v := range rec {
		item[n] = v
	}
	for n, v := range k.attrs() {
		item[n] = v
	}
	item[attrToken] = str(tok)
	in := &dynamodb.PutItemInput{
		TableName:                           aws.String(t.name),
		Item:                                item,
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names(cond),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if v := used(values, cond); len(v) > 0 {
		in.ExpressionAttributeValues = v // DynamoDB refuses an empty map
	}
	return t.conditional(ctx, op, k, tok, func(ctx context.Context) (record, error) {
		if _, err := t.client.PutItem(ctx, in); err != nil {
			return nil, err
		}
		return item, nil
	})
}

// conditional runs one conditional write (do) whose request carries the
// write token tok, and settles its outcome from records, never by guessing:
//
//   - success: applied, with the record do returned;
//   - a failed condition: the record that failed it, from the error when
//     the server returns it (DynamoDB does with ALL_OLD), else from one
//     consistent GetItem. If that record carries tok, the write was ours
//     and applied: the SDK retried a request whose first attempt succeeded
//     but whose response was lost;
//   - an error after which the write may have applied (transport, timeout,
//     5xx): one consistent GetItem, under ResolveTimeout even if ctx is
//     done. The record carries tok: applied. Otherwise the write did not
//     apply (at the time of the read) and the error is returned, wrapped;
//   - any other error: returned, translated.
func (t table) conditional(ctx context.Context, op string, k key, tok string, do func(context.Context) (record, error)) (written, error) {
	rec, err := do(ctx)
	if err == nil {
		return written{applied: true, rec: rec}, nil
	}
	if old, ok := conditionFailed(err); ok {
		if len(old) == 0 {
			if old, err = t.get(ctx, op, k); err != nil {
				return written{}, err
			}
		}
		return written{applied: tokenOf(old) == tok, rec: old}, nil
	}
	if !mayHaveApplied(err) {
		return written{}, translateError(t.name, op, err)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.resolveTimeout)
	defer cancel()
	cur, rerr := t.get(rctx, op+" (resolving an unknown outcome)", k)
	if rerr != nil {
		return written{}, fmt.Errorf("%w; outcome unknown: %v", translateError(t.name, op, err), rerr)
	}
	if cur != nil && tokenOf(cur) == tok {
		return written{applied: true, rec: cur}, nil
	}
	return written{}, fmt.Errorf("%w (not applied: the record does not carry this write)", translateError(t.name, op, err))
}

// newToken returns a random write token.
func newToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// query runs in to the end (or until limit records, when limit > 0) and
// returns the records. With a limit, pages ask for at most min(limit, 1000)
// records each, and records past limit on the last page are dropped.
func (t table) query(ctx context.Context, op string, in *dynamodb.QueryInput, limit int) ([]record, error) {
	if limit > 0 {
		in.Limit = aws.Int32(int32(min(limit, 1000)))
	}
	var out []record
	pages := dynamodb.NewQueryPaginator(t.client, in)
	for pages.HasMorePages() && (limit <= 0 || len(out) < limit) {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, translateError(t.name, op, err)
		}
		out = append(out, page.Items...)
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
