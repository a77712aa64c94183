package awsbackend

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/batonhq/baton/internal/lambdaapp"
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

// NewClients returns the DynamoDB and SQS clients for cfg with e's
// endpoints.
func NewClients(cfg aws.Config, e Endpoints) lambdaapp.AWSClients {
	return lambdaapp.AWSClients{
		DynamoDB: dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
			if e.DynamoDB != "" {
				o.BaseEndpoint = aws.String(e.DynamoDB)
			}
		}),
		SQS: sqs.NewFromConfig(cfg, func(o *sqs.Options) {
			if e.SQS != "" {
				o.BaseEndpoint = aws.String(e.SQS)
			}
		}),
	}
}
