package lambdaapp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/awssqs"
	"github.com/batonhq/baton/internal/backend/awsbackend"
	"github.com/batonhq/baton/internal/jsonlog"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/telemetry"
)

// Env is the process environment a cold start reads: variables and the
// standard streams.
type Env struct {
	GetenvFunc func(string) string
	Stdout     io.Writer // EMF metrics
	Stderr     io.Writer // JSON logs
	// LogHandler, when set, receives the log records in place of the
	// JSON lines on Stderr.
	LogHandler slog.Handler
	// TracerProvider and MeterProvider are the OpenTelemetry providers
	// the handlers record with; nil: the global ones.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
}

// logger is env's logger at level: the user's handler, else the JSON
// lines on Stderr.
func (env Env) logger(level slog.Level) *slog.Logger {
	if env.LogHandler != nil {
		return slog.New(env.LogHandler)
	}
	return NewLogger(env.Stderr, level)
}

// NewLogger returns the functions' JSON logger at level: Powertools-shaped
// lines (package jsonlog), durations in milliseconds, payloads, results
// and secrets redacted. The handlers add the service, cold start,
// function, request and trace to every line of an invocation.
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	return jsonlog.New(w, jsonlog.Options{Level: level})
}

// ParamsOnAWS returns handler params for jobs on DynamoDB (leases, ledger
// and effects on cfg.Table) and SQS (cfg.QueueURL, and cfg.DLQURL when
// set), logging JSON to env.Stderr and metrics to env.Stdout.
func ParamsOnAWS(cfg Config, c awsbackend.Clients, env Env, jobs *baton.Catalog) HandlerParams {
	logger := env.logger(cfg.LogLevel)
	b := awsbackend.New(awsbackend.Params{
		Clients: c, Table: cfg.Table, QueueURL: cfg.QueueURL, DLQURL: cfg.DLQURL, MaxReceives: cfg.MaxReceives,
	})
	p := HandlerParams{
		Jobs: jobs,
		// Refused acquisitions are also counted in the table, for
		// operators (baton status); the metric alone is not visible there.
		Leases:      lease.Counting(b.Leases, logger),
		Ledger:      b.Ledger,
		Effects:     b.Effects,
		RateLimits:  b.RateLimits,
		Queue:       b.Work,
		MaxReceives: cfg.MaxReceives,
		TriggerSkew: cfg.TriggerSkew,
		TriggerAge:  cfg.TriggerAge,
		Logger:      logger,
		Metrics:     env.Stdout,
		Service:     cfg.Service,
		Namespace:   cfg.Namespace,
		Telemetry:   telemetry.New(telemetry.Options{TracerProvider: env.TracerProvider, MeterProvider: env.MeterProvider, Engine: "aws"}),
	}
	if b.DeadLetter != nil {
		p.DeadLetter = b.DeadLetter
	}
	p.Sources = map[string]queue.Sender{queueName(cfg.QueueURL): b.Work}
	for name, url := range cfg.JobQueueURLs {
		q := awssqs.New(c.SQS, url, nil)
		if p.JobQueues == nil {
			p.JobQueues = map[string]queue.Sender{}
		}
		p.JobQueues[name], p.Sources[queueName(url)] = q, q
	}
	return p
}

// queueName is the name of the SQS queue at url (its last path element),
// as the end of its ARN names it.
func queueName(url string) string { return url[strings.LastIndex(url, "/")+1:] }

// cold reads the configuration and the SDK's.
func cold(ctx context.Context, f Function, env Env) (Config, aws.Config, error) {
	cfg, err := LoadConfig(f, env.GetenvFunc)
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
func NewCoordinatorFromEnv(ctx context.Context, jobs *baton.Catalog, env Env) (*CoordinatorHandler, error) {
	cfg, awsCfg, err := cold(ctx, Coordinator, env)
	if err != nil {
		return nil, err
	}
	return NewCoordinatorHandler(ParamsOnAWS(cfg, awsbackend.NewTracedClients(awsCfg, awsbackend.Endpoints{}, env.TracerProvider), env, jobs))
}

// NewConsumerFromEnv is the consumer function's cold start.
func NewConsumerFromEnv(ctx context.Context, jobs *baton.Catalog, env Env) (*ConsumerHandler, error) {
	cfg, awsCfg, err := cold(ctx, Consumer, env)
	if err != nil {
		return nil, err
	}
	return NewConsumerHandler(ParamsOnAWS(cfg, awsbackend.NewTracedClients(awsCfg, awsbackend.Endpoints{}, env.TracerProvider), env, jobs))
}
