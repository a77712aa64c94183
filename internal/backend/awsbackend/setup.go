package awsbackend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/awssqs"
)

// Set-up defaults: those of template.yaml (redrive after 5 receives, a
// visibility timeout of 6 × the consumer's 30 s timeout).
const (
	DefaultTable       = "baton"
	DefaultQueue       = "baton-work"
	DefaultMaxReceives = 5
	DefaultVisibility  = 180 * time.Second
)

// SetupParams name the resources Setup makes.
type SetupParams struct {
	Table string // "" means DefaultTable
	// Queue is the work queue's name; its dead-letter queue is named
	// Queue+awssqs.DLQSuffix. "" means DefaultQueue.
	Queue       string
	MaxReceives int           // the redrive limit; 0 means DefaultMaxReceives
	Visibility  time.Duration // the work queue's visibility timeout; 0 means DefaultVisibility
}

// Resources are what Setup made: the values of the functions'
// environment variables.
type Resources struct {
	Table       string
	QueueURL    string
	DLQURL      string
	MaxReceives int
}

// Env returns r as the Lambda functions' environment variables, in the
// order lambdaapp lists them.
func (r Resources) Env() [][2]string {
	return [][2]string{
		{EnvTable, r.Table},
		{EnvQueueURL, r.QueueURL},
		{EnvDLQURL, r.DLQURL},
		{EnvMaxReceives, fmt.Sprint(r.MaxReceives)},
	}
}

// Setup creates, or brings up to date, the table (awsdynamodb.CreateTable)
// and the work queue with its dead-letter queue and redrive policy
// (awssqs.EnsureQueues). It is idempotent.
func Setup(ctx context.Context, c Clients, p SetupParams) (Resources, error) {
	if c.DynamoDB == nil || c.SQS == nil {
		return Resources{}, errors.New("setup: missing SDK clients")
	}
	if p.Table == "" {
		p.Table = DefaultTable
	}
	if p.Queue == "" {
		p.Queue = DefaultQueue
	}
	if p.MaxReceives == 0 {
		p.MaxReceives = DefaultMaxReceives
	}
	if p.Visibility == 0 {
		p.Visibility = DefaultVisibility
	}
	if err := awsdynamodb.CreateTable(ctx, c.DynamoDB, p.Table); err != nil {
		return Resources{}, fmt.Errorf("setup: %w", err)
	}
	queueURL, dlqURL, err := awssqs.EnsureQueues(ctx, c.SQS, p.Queue, p.MaxReceives, p.Visibility)
	if err != nil {
		return Resources{}, fmt.Errorf("setup: %w", err)
	}
	return Resources{Table: p.Table, QueueURL: queueURL, DLQURL: dlqURL, MaxReceives: p.MaxReceives}, nil
}
