package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/internal/awssqs"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/awsbackend"
	"github.com/batonhq/baton/internal/backend/postgresbackend"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/lambdaapp"
	"github.com/batonhq/baton/internal/sqlite"
)

// backendNames are the values of --backend (shell completion).
var backendNames = []string{"sqlite", "aws"}

// envJob is the variable --job defaults to.
const envJob = "BATON_JOB"

// backendFlags select the store every command works on. They are
// registered here, and only here, on every command that works on a
// backend (command.backend); help shows them as one group.
type backendFlags struct {
	backend string
	store   string
	job     string
	aws     awsFlags
	pg      postgresFlags
}

func (b *backendFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&b.backend, "backend", "sqlite", "where state and queues live: sqlite (embedded file), aws (DynamoDB + SQS from the SDK's standard config) or postgres (one PostgreSQL database, --dsn)")
	fs.StringVar(&b.store, "store", "var/baton.db", "the embedded store's SQLite file (--backend sqlite)")
	fs.StringVar(&b.job, "job", os.Getenv(envJob), "the job to work on (from $"+envJob+" when set; default: the catalog's only job)")
	b.aws.registerEndpoints(fs)
	b.aws.registerResources(fs)
	b.pg.register(fs)
}

func (b *backendFlags) where() string {
	if b.backend == "sqlite" {
		return b.store
	}
	if b.backend == "aws" && b.aws.table != "" {
		return "table " + b.aws.table
	}
	if b.backend == "postgres" && b.pg.dsn != "" {
		return "database " + postgresbackend.Redact(b.pg.dsn)
	}
	return b.backend
}

// openReadOnly opens the backend for a command that only reads: the
// embedded store must exist (nothing is created) and is opened read-only.
func (b *backendFlags) openReadOnly(ctx context.Context) (backend.Backend, error) {
	if b.backend == "sqlite" {
		bk, err := sqlitebackend.OpenReadOnly(ctx, b.store)
		if errors.Is(err, sqlite.ErrNoStore) {
			return backend.Backend{}, usagef("--store %s: no store there (a command that writes, such as 'baton run', creates it)", b.store)
		}
		return bk, err
	}
	return b.open(ctx)
}

func (b *backendFlags) open(ctx context.Context) (backend.Backend, error) {
	switch b.backend {
	case "sqlite":
		return sqlitebackend.Open(ctx, b.store)
	case "aws":
		return b.aws.open(ctx)
	case "postgres":
		return b.pg.open(ctx)
	default:
		return backend.Backend{}, usagef("--backend: unknown backend %q (want sqlite, aws or postgres)", b.backend)
	}
}

// postgresFlags say which database --backend postgres uses.
type postgresFlags struct {
	dsn   string
	retry time.Duration
	// tracer records the statements as spans; nil: the global provider.
	tracer trace.TracerProvider
}

func (p *postgresFlags) register(fs *pflag.FlagSet) {
	// The variable is read after parsing (dsnOrEnv), so that --help never
	// prints a password as the flag's default.
	fs.StringVar(&p.dsn, "dsn", "", "PostgreSQL connection string, postgres://user:password@host:port/db (--backend postgres; from $"+postgresbackend.EnvDSN+" when unset: prefer it, a flag shows in the process list)")
	fs.DurationVar(&p.retry, "pg-retry", postgresbackend.DefaultRetryWindow, "how long each PostgreSQL operation retries a lost or refused connection (a server restart, a failover) before failing; 0: never (--backend postgres)")
}

// dsnOrEnv is --dsn, else $BATON_PG_DSN.
func (p *postgresFlags) dsnOrEnv() string {
	if p.dsn == "" {
		p.dsn = os.Getenv(postgresbackend.EnvDSN)
	}
	return p.dsn
}

func (p *postgresFlags) open(ctx context.Context) (backend.Backend, error) {
	if p.dsnOrEnv() == "" {
		return backend.Backend{}, usagef("--backend postgres: no database: set --dsn or %s", postgresbackend.EnvDSN)
	}
	if p.retry < 0 {
		return backend.Backend{}, usagef("--pg-retry must not be negative, got %s", p.retry)
	}
	window := p.retry
	if window == 0 {
		window = -1 // Params: a negative window is none
	}
	b, err := postgresbackend.Open(ctx, postgresbackend.Params{DSN: p.dsn, RetryWindow: window, TracerProvider: p.tracer})
	if err != nil {
		return backend.Backend{}, fmt.Errorf("--backend postgres: %w", err)
	}
	return b, nil
}

// awsFlags say which AWS endpoints and resources --backend aws uses. The
// resource flags default to the variables the Lambda functions read, so
// that one environment serves both.
type awsFlags struct {
	endpoint         string
	dynamoDBEndpoint string
	sqsEndpoint      string

	table       string
	queueURL    string
	dlqURL      string
	maxReceives int
	receiveWait time.Duration
	jobQueues   string // name=url,… (BATON_JOB_QUEUE_URLS)
	envErr      error  // a bad value in the environment, reported at open
	// tracer records the SDK calls as spans; nil: the global provider.
	tracer trace.TracerProvider
}

func (a *awsFlags) registerEndpoints(fs *pflag.FlagSet) {
	fs.StringVar(&a.endpoint, "endpoint", "", "endpoint URL of both DynamoDB and SQS, for the AWS backend (default: the SDK's configuration)")
	fs.StringVar(&a.dynamoDBEndpoint, "dynamodb-endpoint", "", "DynamoDB endpoint URL (default --endpoint, else $AWS_ENDPOINT_URL_DYNAMODB or the SDK's configuration)")
	fs.StringVar(&a.sqsEndpoint, "sqs-endpoint", "", "SQS endpoint URL (default --endpoint, else $AWS_ENDPOINT_URL_SQS or the SDK's configuration)")
}

func (a *awsFlags) registerResources(fs *pflag.FlagSet) {
	fs.StringVar(&a.table, "table", os.Getenv(lambdaapp.EnvTable), envUsage(lambdaapp.EnvTable, ""))
	fs.StringVar(&a.queueURL, "queue-url", os.Getenv(lambdaapp.EnvQueueURL), envUsage(lambdaapp.EnvQueueURL, ""))
	fs.StringVar(&a.dlqURL, "dlq-url", os.Getenv(lambdaapp.EnvDLQURL), envUsage(lambdaapp.EnvDLQURL, "the work queue's redrive target"))
	n := 0
	if s := os.Getenv(lambdaapp.EnvMaxReceives); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			a.envErr = usagef("%s=%q: not a positive integer", lambdaapp.EnvMaxReceives, s)
		}
		n = v
	}
	fs.IntVar(&a.maxReceives, "max-receives", n, envUsage(lambdaapp.EnvMaxReceives, "the work queue's redrive policy"))
	fs.StringVar(&a.jobQueues, "job-queue-urls", os.Getenv(lambdaapp.EnvJobQueues), envUsage(lambdaapp.EnvJobQueues, "none"))
	fs.DurationVar(&a.receiveWait, "receive-wait", awsbackend.DefaultReceiveWait, "long-poll wait of an idle consumer's SQS receives, up to 20s: longer is cheaper on an idle queue (--backend aws)")
}

// envUsage is the usage of the flag standing for the functions' variable
// name: lambdaapp's description of it, and where the value comes from
// when neither the flag nor the variable is set (unless "").
func envUsage(name, otherwise string) string {
	usage := name
	for _, f := range []lambdaapp.Function{lambdaapp.Coordinator, lambdaapp.Consumer} {
		for _, v := range lambdaapp.Variables(f) {
			if v.Name == name {
				usage = v.Usage
			}
		}
	}
	usage += " (--backend aws; from $" + name + " when set"
	if otherwise != "" {
		usage += ", else " + otherwise
	}
	return usage + ")"
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func (a *awsFlags) endpoints() (awsbackend.Endpoints, error) {
	e := awsbackend.Endpoints{DynamoDB: a.endpoint, SQS: a.endpoint}
	if a.dynamoDBEndpoint != "" {
		e.DynamoDB = a.dynamoDBEndpoint
	}
	if a.sqsEndpoint != "" {
		e.SQS = a.sqsEndpoint
	}
	for _, f := range [][2]string{{"--endpoint", a.endpoint}, {"--dynamodb-endpoint", a.dynamoDBEndpoint}, {"--sqs-endpoint", a.sqsEndpoint}} {
		if f[1] == "" {
			continue
		}
		if u, err := url.Parse(f[1]); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return e, usagef("%s: %q is not an http(s) URL", f[0], f[1])
		}
	}
	return e, nil
}

// clients returns SDK clients from the standard configuration chain and
// the endpoint flags.
func (a *awsFlags) clients(ctx context.Context) (awsbackend.Clients, error) {
	e, err := a.endpoints()
	if err != nil {
		return awsbackend.Clients{}, err
	}
	cfg, err := awsbackend.LoadConfig(ctx)
	if errors.Is(err, awsbackend.ErrNoRegion) {
		return awsbackend.Clients{}, usageError{err}
	}
	if err != nil {
		return awsbackend.Clients{}, err
	}
	return awsbackend.NewTracedClients(cfg, e, a.tracer), nil
}

func (a *awsFlags) open(ctx context.Context) (backend.Backend, error) {
	if a.envErr != nil {
		return backend.Backend{}, a.envErr
	}
	switch {
	case a.table == "":
		return backend.Backend{}, usagef("--backend aws: no table: set --table or %s", lambdaapp.EnvTable)
	case a.queueURL == "":
		return backend.Backend{}, usagef("--backend aws: no work queue: set --queue-url or %s", lambdaapp.EnvQueueURL)
	case a.maxReceives < 0:
		return backend.Backend{}, usagef("--max-receives must not be negative, got %d", a.maxReceives)
	case a.receiveWait < 0 || a.receiveWait > awssqs.MaxWait:
		return backend.Backend{}, usagef("--receive-wait must be within 0..%s, got %s", awssqs.MaxWait, a.receiveWait)
	}
	jobQueues, err := lambdaapp.ParseJobQueueURLs(a.jobQueues)
	if err != nil {
		return backend.Backend{}, usagef("--job-queue-urls: %v", err)
	}
	c, err := a.clients(ctx)
	if err != nil {
		return backend.Backend{}, err
	}
	b, err := awsbackend.Open(ctx, awsbackend.Params{
		Clients: c, Table: a.table, QueueURL: a.queueURL, DLQURL: a.dlqURL, MaxReceives: a.maxReceives,
		ReceiveWait: a.receiveWait, JobQueueURLs: jobQueues,
	})
	if err != nil {
		return backend.Backend{}, fmt.Errorf("--backend aws: %w", err)
	}
	return b, nil
}
