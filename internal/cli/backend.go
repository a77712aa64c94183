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

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/lambdaapp"
	"github.com/batonhq/baton/internal/ops"
)

// backendNames are the values of --backend (shell completion): the
// engines the binary links.
func backendNames() []string { return backend.Engines() }

// envDSN is the variable --dsn defaults to (the postgres engine reads it
// too).
const envDSN = backend.EnvPostgresDSN

// maxReceiveWait is the longest --receive-wait: SQS's longest long poll.
const maxReceiveWait = 20 * time.Second

// engineDefaults are the defaults of the engine called name, for help; the
// zero Config when the binary does not link it.
func engineDefaults(name string) (backend.Config, backend.SetupConfig) {
	d, _ := backend.Lookup(name)
	return d.Defaults, d.SetupDefaults
}

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
	fs.StringVar(&b.backend, "backend", "sqlite", "where state and queues live: sqlite (embedded file), aws (DynamoDB + SQS from the SDK's standard config) or postgres (one PostgreSQL database, --dsn); or the engine's URL: sqlite:///path/to.db, postgres://…, aws://?table=…&queue=…")
	fs.StringVar(&b.store, "store", "var/baton.db", "the embedded store's SQLite file (--backend sqlite)")
	fs.StringVar(&b.job, "job", os.Getenv(envJob), "the job to work on (from $"+envJob+" when set; default: the catalog's only job)")
	b.aws.registerEndpoints(fs)
	b.aws.registerResources(fs)
	b.pg.register(fs)
}

// where says where the backend's state is, without secrets: the store's
// file, the table, the database.
func (b *backendFlags) where() string {
	d, c, err := backend.Resolve(b.backend, b.config())
	if err != nil || d.Where == nil {
		return b.backend
	}
	return d.Where(c)
}

// config is what the flags say of every engine; the engine --backend names
// reads its part.
func (b *backendFlags) config() backend.Config {
	c := backend.Config{
		Store: b.store, DSN: b.pg.dsnOrEnv(), RetryWindow: b.pg.retry,
		Table: b.aws.table, QueueURL: b.aws.queueURL, DLQURL: b.aws.dlqURL, MaxReceives: b.aws.maxReceives, ReceiveWait: b.aws.receiveWait,
		DynamoDBEndpoint: b.aws.endpoint, SQSEndpoint: b.aws.endpoint, TracerProvider: b.aws.tracer,
	}
	if c.RetryWindow == 0 {
		c.RetryWindow = -1 // --pg-retry 0: never; Config: a negative window is none
	}
	if b.aws.dynamoDBEndpoint != "" {
		c.DynamoDBEndpoint = b.aws.dynamoDBEndpoint
	}
	if b.aws.sqsEndpoint != "" {
		c.SQSEndpoint = b.aws.sqsEndpoint
	}
	if c.TracerProvider == nil {
		c.TracerProvider = b.pg.tracer
	}
	return c
}

// openReadOnly opens the backend for a command that only reads: the
// embedded store must exist (nothing is created) and is opened read-only.
func (b *backendFlags) openReadOnly(ctx context.Context) (backend.Backend, error) {
	bk, err := b.openWith(ctx, true)
	if errors.Is(err, backend.ErrNoStore) {
		return backend.Backend{}, usagef("--store %s: no store there (a command that writes, such as 'baton run', creates it)", b.where())
	}
	return bk, err
}

func (b *backendFlags) open(ctx context.Context) (backend.Backend, error) {
	return b.openWith(ctx, false)
}

// openWith opens the engine --backend names through the registry, after
// checking the flags of the engine it is.
func (b *backendFlags) openWith(ctx context.Context, readOnly bool) (backend.Backend, error) {
	d, c, err := backend.Resolve(b.backend, b.config())
	if err != nil {
		return backend.Backend{}, usagef("--backend: %v", err)
	}
	c.ReadOnly = readOnly
	switch d.Name {
	case "postgres":
		err = b.pg.check(c)
	case "aws":
		err = b.aws.check(&c)
	}
	if d.Name != "aws" {
		c.ReceiveWait = 0 // --receive-wait is SQS's long poll
	}
	if err != nil {
		return backend.Backend{}, err
	}
	bk, err := d.Open(ctx, c)
	var config *backend.ConfigError
	switch {
	case errors.As(err, &config):
		return backend.Backend{}, usageError{err}
	case err != nil && !errors.Is(err, backend.ErrNoStore):
		return backend.Backend{}, fmt.Errorf("--backend %s: %w", d.Name, err)
	}
	return bk, err
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
	defaults, _ := engineDefaults("postgres")
	fs.StringVar(&p.dsn, "dsn", "", "PostgreSQL connection string, postgres://user:password@host:port/db (--backend postgres; from $"+envDSN+" when unset: prefer it, a flag shows in the process list)")
	fs.DurationVar(&p.retry, "pg-retry", defaults.RetryWindow, "how long each PostgreSQL operation retries a lost or refused connection (a server restart, a failover) before failing; 0: never (--backend postgres)")
}

// dsnOrEnv is --dsn, else $BATON_PG_DSN.
func (p *postgresFlags) dsnOrEnv() string {
	if p.dsn == "" {
		p.dsn = os.Getenv(envDSN)
	}
	return p.dsn
}

// check reports what is wrong with the postgres flags, c their config.
func (p *postgresFlags) check(c backend.Config) error {
	if c.DSN == "" {
		return usagef("--backend postgres: no database: set --dsn or %s", envDSN)
	}
	if p.retry < 0 {
		return usagef("--pg-retry must not be negative, got %s", p.retry)
	}
	return nil
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
	defaults, _ := engineDefaults("aws")
	fs.DurationVar(&a.receiveWait, "receive-wait", defaults.ReceiveWait, "long-poll wait of an idle consumer's SQS receives, up to 20s: longer is cheaper on an idle queue (--backend aws)")
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

// checkEndpoints reports an endpoint flag that is not an http(s) URL.
func (a *awsFlags) checkEndpoints() error {
	for _, f := range [][2]string{{"--endpoint", a.endpoint}, {"--dynamodb-endpoint", a.dynamoDBEndpoint}, {"--sqs-endpoint", a.sqsEndpoint}} {
		if f[1] == "" {
			continue
		}
		if u, err := url.Parse(f[1]); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("%s: %q is not an http(s) URL", f[0], f[1])
		}
	}
	return nil
}

// check reports what is wrong with the aws flags, c their config, and
// sets c's job queues.
func (a *awsFlags) check(c *backend.Config) error {
	if a.envErr != nil {
		return a.envErr
	}
	switch {
	case c.Table == "":
		return usagef("--backend aws: no table: set --table or %s", lambdaapp.EnvTable)
	case c.QueueURL == "":
		return usagef("--backend aws: no work queue: set --queue-url or %s", lambdaapp.EnvQueueURL)
	case c.MaxReceives < 0:
		return usagef("--max-receives must not be negative, got %d", c.MaxReceives)
	case a.receiveWait < 0 || a.receiveWait > maxReceiveWait:
		return usagef("--receive-wait must be within 0..%s, got %s", maxReceiveWait, a.receiveWait)
	}
	jobQueues, err := lambdaapp.ParseJobQueueURLs(a.jobQueues)
	if err != nil {
		return usagef("--job-queue-urls: %v", err)
	}
	c.JobQueueURLs = jobQueues
	return a.checkEndpoints()
}

// openOperator opens the backend bf names and the operator's actions on
// it for catalog; the caller closes the backend.
func openOperator(ctx context.Context, bf *backendFlags, catalog *baton.Catalog) (backend.Backend, *ops.Operator, error) {
	b, err := bf.open(ctx)
	if err != nil {
		return backend.Backend{}, nil, err
	}
	op, err := ops.New(b, catalog, &ops.Options{Owner: operatorOwner()})
	if err != nil {
		b.Close()
		return backend.Backend{}, nil, err
	}
	return b, op, nil
}
