package awsbackend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/awssqs"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/queue"
)

// Params say which resources a backend works on.
type Params struct {
	Clients Clients
	// Table is the DynamoDB table (EnvTable); required.
	Table string
	// QueueURL is the work queue (EnvQueueURL); required.
	QueueURL string
	// DLQURL is the dead-letter queue (EnvDLQURL); "" means the
	// work queue's redrive target, or none when it has no redrive policy.
	// A queue other than the redrive target is an error.
	DLQURL string
	// MaxReceives is the work queue's redrive limit
	// (EnvMaxReceives); 0 means the redrive policy's
	// maxReceiveCount, or 0 (no forwarding of exhausted messages) when the
	// queue has none. A value that disagrees with the policy is an error.
	MaxReceives int
	// ReceiveWait is the long-poll wait of each receive of an idle
	// consumer, at most awssqs.MaxWait; 0 means DefaultReceiveWait.
	ReceiveWait time.Duration
	// JobQueueURLs are the job queues' URLs (baton.JobQueue) by name.
	JobQueueURLs map[string]string
}

// DefaultReceiveWait is the long-poll wait of an idle consumer's receives.
// SQS answers a long poll as soon as a message is there; every wait that
// ends empty is a billed call, so that longer waits are cheaper on an idle
// queue. One second keeps an idle consumer at one call per second while
// staying responsive on servers that answer a long poll only at its end
// (the local SQS server, see package localaws).
const DefaultReceiveWait = time.Second

// ErrNotSetUp matches Open's error when the table or the work queue does
// not exist (`baton setup` makes them).
var ErrNotSetUp = errors.New("not set up")

// Open checks that the table and the work queue exist (one DescribeTable
// and one GetQueueAttributes call), reads the work queue's redrive policy,
// resolves its target (one GetQueueUrl call) and checks the dead-letter
// queue and receive limit given against it, and returns the backend on
// them. Its Close does nothing: the SDK clients
// hold no resources that need releasing.
func Open(ctx context.Context, p Params) (backend.Backend, error) {
	switch {
	case p.Clients.DynamoDB == nil || p.Clients.SQS == nil:
		return backend.Backend{}, errors.New("aws backend: missing SDK clients")
	case p.Table == "":
		return backend.Backend{}, fmt.Errorf("aws backend: no table (%s)", EnvTable)
	case p.QueueURL == "":
		return backend.Backend{}, fmt.Errorf("aws backend: no work queue URL (%s)", EnvQueueURL)
	case p.MaxReceives < 0:
		return backend.Backend{}, fmt.Errorf("aws backend: %s must not be negative, got %d", EnvMaxReceives, p.MaxReceives)
	case p.ReceiveWait < 0 || p.ReceiveWait > awssqs.MaxWait:
		return backend.Backend{}, fmt.Errorf("aws backend: receive wait %s out of 0..%s", p.ReceiveWait, awssqs.MaxWait)
	}
	if p.ReceiveWait == 0 {
		p.ReceiveWait = DefaultReceiveWait
	}
	if err := checkTable(ctx, p.Clients.DynamoDB, p.Table); err != nil {
		return backend.Backend{}, fmt.Errorf("aws backend: %w", err)
	}
	work := awssqs.New(p.Clients.SQS, p.QueueURL, nil)
	dlqURL, maxReceives, err := deadLetter(ctx, p, work)
	if err != nil {
		return backend.Backend{}, fmt.Errorf("aws backend: %w", err)
	}
	p.DLQURL, p.MaxReceives = dlqURL, maxReceives
	return New(p), nil
}

// New returns the backend on p's resources without a call to AWS: the
// Lambda functions' cold start, whose resources the template wires. It
// does not check that they exist (Open does) nor read the redrive policy:
// p.DLQURL and p.MaxReceives are taken as given ("" and 0: none).
func New(p Params) backend.Backend {
	if p.ReceiveWait == 0 {
		p.ReceiveWait = DefaultReceiveWait
	}
	b := backend.Backend{
		Name:        "aws",
		Leases:      awsdynamodb.NewLeaseStore(p.Clients.DynamoDB, p.Table, nil),
		Locks:       awsdynamodb.NewLockStore(p.Clients.DynamoDB, p.Table, nil),
		Ledger:      awsdynamodb.NewLedgerStore(p.Clients.DynamoDB, p.Table, nil),
		Effects:     awsdynamodb.NewEffectStore(p.Clients.DynamoDB, p.Table, nil),
		RateLimits:  awsdynamodb.NewRateLimitStore(p.Clients.DynamoDB, p.Table, nil),
		Work:        awssqs.New(p.Clients.SQS, p.QueueURL, nil),
		MaxReceives: p.MaxReceives,
		ReceiveWait: p.ReceiveWait,
		Retention:   "finished runs, terminal items (results included), settle marks and item pages carry a DynamoDB TTL of 30 days after they finish (awsdynamodb.DefaultRetention); DynamoDB deletes them after it, possibly days late",
		CloseFunc:   func() error { return nil },
	}
	if p.DLQURL != "" {
		b.DeadLetter = awssqs.New(p.Clients.SQS, p.DLQURL, nil)
	}
	b.JobQueueFunc = func(_ context.Context, name string) (backend.Queue, error) {
		url, ok := p.JobQueueURLs[name]
		if !ok {
			return nil, fmt.Errorf("no URL for job queue %s: set it in %s (name=url,…)", name, EnvJobQueueURLs)
		}
		return awssqs.New(p.Clients.SQS, url, nil), nil
	}
	return b
}

// EnvJobQueueURLs names the job queues' URLs: name=url,name=url.
const EnvJobQueueURLs = "BATON_JOB_QUEUE_URLS"

func checkTable(ctx context.Context, client *dynamodb.Client, table string) error {
	_, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	var missing *types.ResourceNotFoundException
	if errors.As(err, &missing) {
		return fmt.Errorf("table %q: %w: it does not exist (run 'baton setup')", table, ErrNotSetUp)
	}
	if err != nil {
		return fmt.Errorf("table %q: %w", table, err)
	}
	return nil
}

// deadLetter returns the dead-letter queue URL and the receive limit:
// those given, completed from the work queue's redrive policy and checked
// against it.
func deadLetter(ctx context.Context, p Params, work *awssqs.Queue) (string, int, error) {
	policy, ok, err := work.Redrive(ctx)
	if errors.Is(err, queue.ErrNotFound) {
		return "", 0, fmt.Errorf("work queue: %w: %w (run 'baton setup')", ErrNotSetUp, err)
	}
	if err != nil {
		return "", 0, fmt.Errorf("work queue: %w", err)
	}
	if !ok {
		return p.DLQURL, p.MaxReceives, nil
	}
	maxReceives := p.MaxReceives
	switch {
	case maxReceives == 0:
		maxReceives = policy.MaxReceiveCount
	case maxReceives != policy.MaxReceiveCount:
		return "", 0, fmt.Errorf("%s is %d but the work queue's redrive policy moves messages to the dead-letter queue after %d receives; they must agree",
			EnvMaxReceives, maxReceives, policy.MaxReceiveCount)
	}
	target, err := awssqs.URLForARN(ctx, p.Clients.SQS, policy.DeadLetterTargetARN)
	if err != nil {
		return "", 0, fmt.Errorf("the work queue's dead-letter queue: %w", err)
	}
	if p.DLQURL == "" || p.DLQURL == target {
		return target, maxReceives, nil
	}
	// Another spelling of the same queue (another endpoint host) is
	// accepted: its ARN decides.
	arn, err := awssqs.New(p.Clients.SQS, p.DLQURL, nil).ARN(ctx)
	if err != nil && !errors.Is(err, queue.ErrNotFound) {
		return "", 0, fmt.Errorf("%s: %w", EnvDLQURL, err)
	}
	if err != nil || arn != policy.DeadLetterTargetARN {
		return "", 0, fmt.Errorf("%s is %s but the work queue's redrive policy moves messages to the dead-letter queue %s; they must agree (or leave %s unset)",
			EnvDLQURL, p.DLQURL, target, EnvDLQURL)
	}
	return p.DLQURL, maxReceives, nil
}
