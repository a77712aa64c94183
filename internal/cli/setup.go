package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/batonhq/baton/internal/backend/awsbackend"
	"github.com/batonhq/baton/internal/backend/postgresbackend"
	"github.com/batonhq/baton/internal/lambdaapp"
)

const setupSynopsis = `setup [--endpoint URL | --dynamodb-endpoint URL --sqs-endpoint URL] [flags]

Creates the DynamoDB table and the SQS work queue with its dead-letter
queue (redrive after --max-receives receives), or brings existing ones up
to date; safe to run again. Then prints, as shell exports, the variables
the Lambda functions and 'baton run|invoke --backend aws' read:

  eval "$(baton setup --dynamodb-endpoint http://127.0.0.1:4567 --sqs-endpoint http://127.0.0.1:4576)"

When setup fails, the error goes to stderr and, when stdout is not a
terminal, stdout gets a line that makes that eval fail too (exit status
1), so that a script under 'set -e' stops instead of going on with
nothing exported. --json prints the variables as one JSON object.

Region and credentials come from the SDK's standard configuration
(AWS_REGION, AWS_PROFILE, AWS_ACCESS_KEY_ID, ...; local emulators accept
any). Endpoints default to AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL_SQS,
else the region's. For a deployed stack, 'sam deploy' makes these
resources: use its outputs instead.

With --backend postgres it applies the schema's versioned migrations to
the database of --dsn (or $BATON_PG_DSN) and creates the work queue
and its dead-letter queue; safe to run again, and from several places at
once. It prints the schema version and the migrations it applied
(and no export: the connection string may hold a password).`

func setupCommand() command {
	return command{synopsis: setupSynopsis, summary: "create the AWS table and queues (--backend aws) or the PostgreSQL schema (--backend postgres)",
		example:    "  eval \"$(baton setup --dynamodb-endpoint http://127.0.0.1:4567 --sqs-endpoint http://127.0.0.1:4576)\"\n  baton setup --table baton-dev --queue baton-dev --json",
		defineFunc: defineSetup}
}

func defineSetup(e *env, fs *pflag.FlagSet) runFunc {
	var (
		a       awsFlags
		p       awsbackend.SetupParams
		pg      postgresFlags
		backend string
	)
	fs.StringVar(&backend, "backend", "aws", "what to set up: aws (DynamoDB table and SQS queues) or postgres (schema and queues in one database)")
	pg.register(fs)
	a.registerEndpoints(fs)
	fs.StringVar(&p.Table, "table", envOr(lambdaapp.EnvTable, awsbackend.DefaultTable), "the DynamoDB table to create (from $"+lambdaapp.EnvTable+" when set)")
	fs.StringVar(&p.Queue, "queue", awsbackend.DefaultQueue, "the work queue's name; its dead-letter queue is this name + -dlq")
	fs.IntVar(&p.MaxReceives, "max-receives", awsbackend.DefaultMaxReceives, "receives before a message moves to the dead-letter queue (the redrive policy's maxReceiveCount)")
	fs.DurationVar(&p.Visibility, "visibility", awsbackend.DefaultVisibility, "the work queue's visibility timeout (at least 6 × the consumer's timeout)")
	return func(ctx context.Context, _ []string) error {
		switch backend {
		case "aws":
		case "postgres":
			if p.MaxReceives < 1 {
				return usagef("--max-receives must be at least 1, got %d", p.MaxReceives)
			}
			return setupPostgres(ctx, e, &pg, p.MaxReceives)
		default:
			return usagef("--backend: %q cannot be set up (want aws or postgres; the sqlite store sets itself up)", backend)
		}
		err := setup(ctx, e, &a, p)
		if err != nil && !e.json && !isTerminal(e.stdout) {
			// Under eval "$(baton setup …)" make the eval fail as well.
			fmt.Fprintln(e.stdout, "echo 'baton setup failed (see above): nothing exported' >&2; false")
		}
		return err
	}
}

func setup(ctx context.Context, e *env, a *awsFlags, p awsbackend.SetupParams) error {
	switch {
	case p.Table == "":
		return usagef("--table must not be empty")
	case p.Queue == "":
		return usagef("--queue must not be empty")
	case p.MaxReceives < 1:
		return usagef("--max-receives must be at least 1, got %d", p.MaxReceives)
	case p.Visibility < time.Second:
		return usagef("--visibility must be at least 1s, got %s", p.Visibility)
	}
	endpoints, err := a.endpoints()
	if err != nil {
		return err
	}
	c, err := a.clients(ctx)
	if err != nil {
		return err
	}
	res, err := awsbackend.Setup(ctx, c, p)
	if err != nil {
		return err
	}
	e.sayf("# table %s; work queue %s, to its dead-letter queue after %d receives, visibility %s\n",
		res.Table, p.Queue, res.MaxReceives, p.Visibility)
	vars := res.Env()
	if endpoints.DynamoDB != "" {
		vars = append(vars, [2]string{"AWS_ENDPOINT_URL_DYNAMODB", endpoints.DynamoDB})
	}
	if endpoints.SQS != "" {
		vars = append(vars, [2]string{"AWS_ENDPOINT_URL_SQS", endpoints.SQS})
	}
	if e.json {
		m := map[string]string{}
		for _, v := range vars {
			m[v[0]] = v[1]
		}
		e.set("variables", m)
		return nil
	}
	printExports(e.stdout, vars)
	return nil
}

// setupPostgres applies the migrations and makes the queues.
func setupPostgres(ctx context.Context, e *env, pg *postgresFlags, maxReceives int) error {
	if pg.dsnOrEnv() == "" {
		return usagef("--backend postgres: no database: set --dsn or %s", postgresbackend.EnvDSN)
	}
	res, err := postgresbackend.Setup(ctx, pg.dsn, maxReceives)
	if err != nil {
		return err
	}
	applied := "none (already current)"
	if len(res.Applied) > 0 {
		applied = strings.Trim(fmt.Sprint(res.Applied), "[]")
	}
	e.sayf("# database %s: schema version %d (migrations applied: %s); work queue %s, to %s after %d receives\n",
		postgresbackend.Redact(pg.dsn), res.Version, applied, postgresbackend.WorkQueue, postgresbackend.DeadLetterQueue, res.MaxReceives)
	if e.json {
		e.set("database", postgresbackend.Redact(pg.dsn))
		e.set("schema_version", res.Version)
		e.set("migrations_applied", res.Applied)
		e.set("max_receives", res.MaxReceives)
	}
	return nil
}

// printExports writes vars as POSIX shell export lines.
func printExports(w io.Writer, vars [][2]string) {
	for _, v := range vars {
		fmt.Fprintf(w, "export %s=%s\n", v[0], shellQuote(v[1]))
	}
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// characters that need no quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
