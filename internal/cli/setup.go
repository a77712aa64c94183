package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/batonhq/baton/internal/backend"
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
		a      awsFlags
		pg     postgresFlags
		engine string
	)
	_, p := engineDefaults("aws")
	fs.StringVar(&engine, "backend", "aws", "what to set up: aws (DynamoDB table and SQS queues) or postgres (schema and queues in one database)")
	pg.register(fs)
	a.registerEndpoints(fs)
	fs.StringVar(&p.Table, "table", envOr(lambdaapp.EnvTable, p.Table), "the DynamoDB table to create (from $"+lambdaapp.EnvTable+" when set)")
	fs.StringVar(&p.Queue, "queue", p.Queue, "the work queue's name; its dead-letter queue is this name + -dlq")
	fs.IntVar(&p.MaxReceives, "max-receives", p.MaxReceives, "receives before a message moves to the dead-letter queue (the redrive policy's maxReceiveCount)")
	fs.DurationVar(&p.Visibility, "visibility", p.Visibility, "the work queue's visibility timeout (at least 6 × the consumer's timeout)")
	return func(ctx context.Context, _ []string) error {
		b := backendFlags{backend: engine, aws: a, pg: pg}
		d, c, err := backend.Resolve(engine, b.config())
		if err != nil {
			return usagef("--backend: %v", err)
		}
		if d.Setup == nil {
			return usagef("--backend: %q cannot be set up (want aws or postgres; the sqlite store sets itself up)", engine)
		}
		if p.MaxReceives < 1 {
			return usagef("--max-receives must be at least 1, got %d", p.MaxReceives)
		}
		if d.Name != "aws" {
			if d.Name == "postgres" {
				if err := b.pg.check(c); err != nil {
					return err
				}
			}
			return setupEngine(ctx, e, d, c, p)
		}
		err = setupAWS(ctx, e, &b.aws, d, c, p)
		if err != nil && !e.json && !isTerminal(e.stdout) {
			// Under eval "$(baton setup …)" make the eval fail as well.
			fmt.Fprintln(e.stdout, "echo 'baton setup failed (see above): nothing exported' >&2; false")
		}
		return err
	}
}

func setupAWS(ctx context.Context, e *env, a *awsFlags, d backend.Driver, c backend.Config, p backend.SetupConfig) error {
	switch {
	case p.Table == "":
		return usagef("--table must not be empty")
	case p.Queue == "":
		return usagef("--queue must not be empty")
	case p.Visibility < time.Second:
		return usagef("--visibility must be at least 1s, got %s", p.Visibility)
	}
	if err := a.checkEndpoints(); err != nil {
		return err
	}
	return setupEngine(ctx, e, d, c, p)
}

// setupEngine runs d's setup and reports what it made: a line, then the
// variables as shell exports, or (--json) the report's fields and the
// variables as one object.
func setupEngine(ctx context.Context, e *env, d backend.Driver, c backend.Config, p backend.SetupConfig) error {
	res, err := d.Setup(ctx, c, p)
	var config *backend.ConfigError
	if errors.As(err, &config) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	e.sayf("# %s\n", res.Summary)
	if e.json {
		for k, v := range res.Fields {
			e.set(k, v)
		}
		if len(res.Env) > 0 {
			m := map[string]string{}
			for _, v := range res.Env {
				m[v[0]] = v[1]
			}
			e.set("variables", m)
		}
		return nil
	}
	printExports(e.stdout, res.Env)
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
