package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/awssqs"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/lab/bench/awscall"
)

// AWSOptions tune an AWS target.
type AWSOptions struct {
	// AllOld makes the DynamoDB server look as if it returned the old
	// record with a failed condition (ReturnValuesOnConditionCheckFailure
	// ALL_OLD), as DynamoDB does and the emulator does not: the record is
	// read with an uncounted client and put in the error. Only call counts
	// are meaningful with it: the target runs scenario 1 only.
	AllOld bool
	// MaxReceives is the work queue's redrive limit; 0 means 5.
	MaxReceives int
	// ShardsPerPartition is the ledger's (awsdynamodb.Options); 0: its
	// default.
	ShardsPerPartition int
	// ReceiveWait, when set, is the idle consumers' long-poll wait (the
	// scale runs: Config.ScaleLongPoll); else the engine's short default,
	// which lets a scenario's consumers stop at once.
	ReceiveWait time.Duration
}

// awsEndpoints are an AWS target's endpoints and options.
type awsEndpoints struct {
	ddb, sqs aws.Config
	o        AWSOptions
}

// idleConns is how many idle connections per host the clients keep: more
// than the most concurrent requests any scenario makes, so that no request
// pays for a new connection (the SDK's default keeps 10).
const idleConns = 256

// AWSTarget opens each Env on a new table of the DynamoDB endpoint and new
// queues of the SQS endpoint that ddb and sq (as from Endpoint.Config)
// point at.
func AWSTarget(name string, ddb, sq aws.Config, o AWSOptions) Target {
	if o.MaxReceives <= 0 {
		o.MaxReceives = 5
	}
	return Target{Name: name, CallsOnly: o.AllOld, aws: &awsEndpoints{ddb: ddb, sqs: sq, o: o}, OpenFunc: func(ctx context.Context, name string) (*Env, error) {
		return openAWS(ctx, name, ddb, sq, o)
	}}
}

func openAWS(ctx context.Context, name string, ddbCfg, sqsCfg aws.Config, o AWSOptions) (*Env, error) {
	hc := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = idleConns, idleConns
	})
	counter := &awscall.Counter{}
	ddb := dynamodb.NewFromConfig(ddbCfg, func(opt *dynamodb.Options) {
		opt.HTTPClient = hc
		opt.APIOptions = append(opt.APIOptions, counter.Middleware(), timeCalls)
	})
	ddbPlain := dynamodb.NewFromConfig(ddbCfg, func(opt *dynamodb.Options) { opt.HTTPClient = hc })
	sq := sqs.NewFromConfig(sqsCfg, func(opt *sqs.Options) {
		opt.HTTPClient = hc
		opt.APIOptions = append(opt.APIOptions, counter.Middleware(), timeCalls)
	})
	sqPlain := sqs.NewFromConfig(sqsCfg, func(opt *sqs.Options) { opt.HTTPClient = hc })

	table := "bench-" + name
	if err := awsdynamodb.CreateTable(ctx, ddbPlain, table); err != nil {
		return nil, err
	}
	workURL, dlqURL, err := awssqs.EnsureQueues(ctx, sqPlain, name, o.MaxReceives, 3*time.Minute)
	if err != nil {
		return nil, err
	}
	raw, err := sqPlain.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-raw")})
	if err != nil {
		return nil, fmt.Errorf("create raw queue: %w", err)
	}
	rawURL := aws.ToString(raw.QueueUrl)

	// Job queues (Job.Queue) are created on first use, each with its own
	// dead-letter queue, as the template declares one per job queue.
	var jqMu sync.Mutex
	jobQueues := map[string][2]string{}
	jobQueueURL := func(ctx context.Context, q string) (string, error) {
		jqMu.Lock()
		defer jqMu.Unlock()
		if u, ok := jobQueues[q]; ok {
			return u[0], nil
		}
		u, d, err := awssqs.EnsureQueues(ctx, sqPlain, name+"-"+q, o.MaxReceives, 3*time.Minute)
		if err != nil {
			return "", err
		}
		jobQueues[q] = [2]string{u, d}
		return u, nil
	}

	var api awsdynamodb.API = ddb
	if o.AllOld {
		api = allOld{API: ddb, read: ddbPlain, table: table}
	}
	closeAll := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var errs []error
		if _, err := ddbPlain.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}); err != nil {
			errs = append(errs, err)
		}
		urls := []string{workURL, dlqURL, rawURL}
		jqMu.Lock()
		for _, u := range jobQueues {
			urls = append(urls, u[0], u[1])
		}
		jqMu.Unlock()
		for _, u := range urls {
			if _, err := sqPlain.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)}); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	// With a long poll the empty receives the cost rows count are those a
	// deployment pays, not a short poll's (a thousand receive loops at
	// half a second made 1.1 requests per item of a bulk run on their own).
	receiveWait := min(o.ReceiveWait, awssqs.MaxWait)
	backend := func(api awsdynamodb.API, c *sqs.Client) backend.Backend {
		return backend.Backend{
			Name:        "aws",
			Leases:      awsdynamodb.NewLeaseStore(api, table, nil),
			Ledger:      awsdynamodb.NewLedgerStore(api, table, &awsdynamodb.Options{ShardsPerPartition: o.ShardsPerPartition}),
			Effects:     awsdynamodb.NewEffectStore(api, table, nil),
			RateLimits:  awsdynamodb.NewRateLimitStore(api, table, nil),
			Work:        awssqs.New(c, workURL, nil),
			DeadLetter:  awssqs.New(c, dlqURL, nil),
			MaxReceives: o.MaxReceives,
			ReceiveWait: receiveWait,
			CloseFunc:   func() error { return nil },
			JobQueueFunc: func(ctx context.Context, q string) (backend.Queue, error) {
				u, err := jobQueueURL(ctx, q)
				if err != nil {
					return nil, err
				}
				return awssqs.New(c, u, nil), nil
			},
		}
	}
	info := "dynalite (in memory) and local-aws-sqs, each one Node.js process on loopback"
	if o.AllOld {
		info += "; failed conditions answered with the old record, read outside the count"
	}
	return &Env{
		Backend: backend(api, sq),
		Calls:   counter,
		Plain:   backend(ddbPlain, sqPlain),
		RawWriteFunc: func(ctx context.Context, key string) error {
			_, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{
				TableName: aws.String(table),
				Item: map[string]ddbtypes.AttributeValue{
					"pk": &ddbtypes.AttributeValueMemberS{Value: "RAW#" + key},
					"sk": &ddbtypes.AttributeValueMemberS{Value: "RAW"},
					"n":  &ddbtypes.AttributeValueMemberN{Value: "1"},
				},
				ConditionExpression: aws.String("attribute_not_exists(pk)"),
			})
			if err != nil {
				return fmt.Errorf("raw put %s: %w", key, err)
			}
			return nil
		},
		RawSendFunc: func(ctx context.Context, msgs []queue.Message) error {
			entries := make([]sqstypes.SendMessageBatchRequestEntry, len(msgs))
			for i, m := range msgs {
				e := sqstypes.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(string(m.Body))}
				if len(m.Attributes) > 0 {
					e.MessageAttributes = make(map[string]sqstypes.MessageAttributeValue, len(m.Attributes))
					for k, v := range m.Attributes {
						e.MessageAttributes[k] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
					}
				}
				entries[i] = e
			}
			out, err := sq.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(rawURL), Entries: entries})
			if err != nil {
				return fmt.Errorf("raw send: %w", err)
			}
			if len(out.Failed) > 0 {
				return fmt.Errorf("raw send: %d entries failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
			}
			return nil
		},
		Info:      info,
		CloseFunc: closeAll,
	}, nil
}

// allOld puts the current record in a failed condition's error, read with
// another client, when the server did not: as DynamoDB answers a write
// with ReturnValuesOnConditionCheckFailure ALL_OLD.
type allOld struct {
	awsdynamodb.API
	read  awsdynamodb.API
	table string
}

func (a allOld) withOld(ctx context.Context, key map[string]ddbtypes.AttributeValue, err error) error {
	var ccf *ddbtypes.ConditionalCheckFailedException
	if !errors.As(err, &ccf) || len(ccf.Item) > 0 {
		return err
	}
	out, gerr := a.read.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(a.table), Key: key, ConsistentRead: aws.Bool(true)})
	if gerr != nil {
		return err
	}
	return &ddbtypes.ConditionalCheckFailedException{Message: ccf.Message, Item: out.Item}
}

func (a allOld) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := a.API.UpdateItem(ctx, in, o...)
	return out, a.withOld(ctx, in.Key, err)
}

func (a allOld) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := a.API.PutItem(ctx, in, o...)
	return out, a.withOld(ctx, map[string]ddbtypes.AttributeValue{"pk": in.Item["pk"], "sk": in.Item["sk"]}, err)
}
