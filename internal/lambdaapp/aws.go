package lambdaapp

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/awssqs"
	"github.com/batonhq/baton/internal/contention"
	"github.com/batonhq/baton/internal/jobs"
)

// Env is the process environment a cold start reads: variables and the
// standard streams.
type Env struct {
	Getenv func(string) string
	Stdout io.Writer // EMF metrics
	Stderr io.Writer // JSON logs
}

// NewLogger returns the functions' JSON logger at level.
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

// AWSClients are the SDK clients the functions use.
type AWSClients struct {
	DynamoDB *dynamodb.Client
	SQS      *sqs.Client
}

// NewAWSClients returns the clients for awsCfg (config.LoadDefaultConfig:
// region, credentials, and endpoint overrides such as
// AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL_SQS).
func NewAWSClients(awsCfg aws.Config) AWSClients {
	return AWSClients{DynamoDB: dynamodb.NewFromConfig(awsCfg), SQS: sqs.NewFromConfig(awsCfg)}
}

// ParamsOnAWS returns handler params on DynamoDB (leases, ledger and the
// reference job's bars on cfg.Table) and SQS (cfg.QueueURL, and
// cfg.DLQURL when set), logging JSON to env.Stderr and metrics to
// env.Stdout.
func ParamsOnAWS(cfg Config, c AWSClients, env Env) HandlerParams {
	logger := NewLogger(env.Stderr, cfg.LogLevel)
	// Refused acquisitions are also counted in the table, for operators
	// (baton status); the metric alone is not visible there.
	leases := contention.Counting(awsdynamodb.NewLeaseStore(c.DynamoDB, cfg.Table, nil),
		awsdynamodb.NewContentionStore(c.DynamoDB, cfg.Table, nil), logger)
	p := HandlerParams{
		Job:         cfg.Job,
		Jobs:        jobs.Catalog(awsdynamodb.NewBarsStore(c.DynamoDB, cfg.Table, nil), nil),
		Leases:      leases,
		Ledger:      awsdynamodb.NewLedgerStore(c.DynamoDB, cfg.Table, nil),
		Queue:       awssqs.New(c.SQS, cfg.QueueURL, nil),
		MaxReceives: cfg.MaxReceives,
		TriggerSkew: cfg.TriggerSkew,
		Logger:      logger,
		Metrics:     env.Stdout,
	}
	if cfg.DLQURL != "" {
		p.DeadLetter = awssqs.New(c.SQS, cfg.DLQURL, nil)
	}
	return p
}

// cold reads the configuration and the SDK's.
func cold(ctx context.Context, f Function, env Env) (Config, aws.Config, error) {
	cfg, err := LoadConfig(f, env.Getenv)
	if err != nil {
		return Config{}, aws.Config{}, err
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return Config{}, aws.Config{}, fmt.Errorf("%s: AWS configuration: %w", f, err)
	}
	return cfg, awsCfg, nil
}

// NewCoordinatorFromEnv is the coordinator function's cold start: its
// configuration from env, the AWS stores and queue, the handler. The error
// names every missing or bad variable.
func NewCoordinatorFromEnv(ctx context.Context, env Env) (*CoordinatorHandler, error) {
	cfg, awsCfg, err := cold(ctx, Coordinator, env)
	if err != nil {
		return nil, err
	}
	return NewCoordinatorHandler(ParamsOnAWS(cfg, NewAWSClients(awsCfg), env))
}

// NewConsumerFromEnv is the consumer function's cold start.
func NewConsumerFromEnv(ctx context.Context, env Env) (*ConsumerHandler, error) {
	cfg, awsCfg, err := cold(ctx, Consumer, env)
	if err != nil {
		return nil, err
	}
	return NewConsumerHandler(ParamsOnAWS(cfg, NewAWSClients(awsCfg), env))
}
