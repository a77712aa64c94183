package awsbackend

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.opentelemetry.io/otel/trace"
)

// ErrNoRegion is returned by LoadConfig when the configuration chain names
// no region.
var ErrNoRegion = errors.New("no AWS region: set AWS_REGION or a profile's region (any region will do for local emulators)")

// LoadConfig loads the SDK's standard configuration chain (environment,
// shared config and credentials files, container and instance roles). It
// returns ErrNoRegion when no region is configured: every call would fail
// without one. Credentials are resolved lazily, on the first call.
func LoadConfig(ctx context.Context) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return aws.Config{}, fmt.Errorf("AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, ErrNoRegion
	}
	return cfg, nil
}

// Endpoints override the endpoint of each service. An empty field leaves
// the endpoint to the configuration chain (AWS_ENDPOINT_URL_DYNAMODB,
// AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL, the shared config file), and
// without any override to the region's public endpoint.
type Endpoints struct {
	DynamoDB string
	SQS      string
}

// Clients are the SDK clients a backend works with.
type Clients struct {
	DynamoDB *dynamodb.Client
	SQS      *sqs.Client
}

// Environment variables naming a deployment's resources: the Lambda
// functions read them, and the CLI's --backend aws flags default to them.
const (
	EnvTable       = "BATON_TABLE"        // DynamoDB table (leases, runs, items, effects)
	EnvQueueURL    = "BATON_QUEUE_URL"    // work queue URL
	EnvDLQURL      = "BATON_DLQ_URL"      // dead-letter queue URL
	EnvMaxReceives = "BATON_MAX_RECEIVES" // the work queue's redrive maxReceiveCount
)

// NewClients returns the DynamoDB and SQS clients for cfg with e's
// endpoints, their calls traced through the global OpenTelemetry
// provider (NewTracedClients).
func NewClients(cfg aws.Config, e Endpoints) Clients { return NewTracedClients(cfg, e, nil) }

// NewTracedClients returns the DynamoDB and SQS clients for cfg with e's
// endpoints, each call a span recorded by tp (nil: the global provider),
// a child of the span in the call's context: see tracerProvider.
func NewTracedClients(cfg aws.Config, e Endpoints, tp trace.TracerProvider) Clients {
	traced := tracerProvider{tp: tp}
	return Clients{
		DynamoDB: dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
			o.TracerProvider = traced
			if e.DynamoDB != "" {
				o.BaseEndpoint = aws.String(e.DynamoDB)
			}
		}),
		SQS: sqs.NewFromConfig(cfg, func(o *sqs.Options) {
			o.TracerProvider = traced
			if e.SQS != "" {
				o.BaseEndpoint = aws.String(e.SQS)
			}
		}),
	}
}
