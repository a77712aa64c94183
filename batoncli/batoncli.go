// Package batoncli is baton's operator CLI and local runtime for a
// catalog of jobs, as a cobra command tree a user's own binary serves:
//
//	func main() {
//		batoncli.Main(catalog)
//	}
//
// gives that binary baton's commands with the user's jobs:
//
//	run      the jobs' ticks end to end (--once: one tick, then a report)
//	serve    the coordinator over HTTP (CloudEvents, JSON) and the pull consumers
//	invoke   a Lambda function's handler on an event file, in-process
//	setup    the DynamoDB table and SQS queues (with redrive) for --backend aws
//	status   leases, recent runs, item states and staleness
//	ui       a web dashboard: runs, timelines, staleness, lease, dead letters, actions
//	replay   a tick, a range of ticks (backfill), an item or an event again
//	dlq      list, redrive and purge the dead-letter queue
//	lease    show a job's lease; release one whose holder is dead
//	lock     show application locks (batonlock); release one whose holder is dead
//	cancel   cancel a run's items that are not terminal
//	pause    pause a job: its ticks are skipped and recorded until resume
//	resume   resume a paused job
//	completion  the shell completion script (bash, zsh, fish, powershell)
//	template check a SAM template's schedules against the catalog
//	version  baton's version
//
// Every command works on the embedded SQLite store (--store, default
// var/baton.db) or, with --backend aws, on DynamoDB and SQS (the SDK's
// standard configuration, the resources from --table/--queue-url/… or the
// variables the Lambda functions read). --job picks a job of the catalog;
// it may be left out when the catalog has one job, and status without it
// shows every job.
//
// The binary names itself in its usage lines, help examples and error
// messages: by its program name (the base name of os.Args[0]), or the
// name given with the Name option.
//
// NewRootCommand returns the tree for embedding: add commands of your own
// to it, or mount it under another root. Flags are POSIX style (--name
// value); every command prints one JSON object on stdout with --json.
// Exit statuses, the same for every command: 0 success, 1 a failed
// outcome (an item ended DEAD, a batch reported failed records, a refused
// operation), 2 bad usage or input (with --json, one JSON object too:
// {"command", "ok": false, "error", "exit_status": 2}).
package batoncli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/cli"
	"github.com/batonhq/baton/internal/samtemplate"
)

// Exit statuses of Run and Main.
const (
	ExitOK      = cli.ExitOK      // success, or nothing to do
	ExitFailure = cli.ExitFailure // the command ran; the outcome is a failure
	ExitUsage   = cli.ExitUsage   // bad usage or input
)

// An Option configures NewRootCommand, Run and Main.
type Option func(*options)

type options struct {
	name string
	tel  cli.Telemetry
}

// Name sets the program's name that usage lines, help examples and error
// messages show ("mybaton status: …"). Without it, the base name of
// os.Args[0] (without .exe).
func Name(name string) Option { return func(o *options) { o.name = name } }

// TracerProvider records the spans of the commands that run work (run,
// serve, submit, replay): a span per coordinator invocation and per item
// (see docs/tracing.md). Without it, the global provider
// (otel.SetTracerProvider), a no-op until one is set. `run --once
// --trace stdout` records into a tree of its own instead.
func TracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tel.TracerProvider = tp }
}

// MeterProvider records those commands' metrics (items by outcome,
// tick-to-done, claim latency, lease contention). Without it, the global
// provider.
func MeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) { o.tel.MeterProvider = mp }
}

// LogHandler receives those commands' log records in place of the
// --log/--log-format logger on stderr: the handler decides level and
// format.
func LogHandler(h slog.Handler) Option { return func(o *options) { o.tel.LogHandler = h } }

func apply(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.name == "" {
		o.name = programName(os.Args)
	}
	return o
}

// programName is the base name of args[0], "baton" when there is none.
func programName(args []string) string {
	if len(args) == 0 {
		return "baton"
	}
	name := strings.TrimSuffix(filepath.Base(args[0]), ".exe")
	if name == "" || name == "." || name == string(filepath.Separator) {
		return "baton"
	}
	return name
}

// NewRootCommand returns the command tree serving catalog. Its RunE
// functions return errors without printing them; Run prints them and maps
// them to exit statuses.
func NewRootCommand(catalog *baton.Catalog, opts ...Option) *cobra.Command {
	o := apply(opts)
	return cli.NewRootCommandWith(catalog, o.name, o.tel)
}

// CheckTemplate checks the SAM template at path against catalog, as
// `template check` does: every scheduled job has exactly one schedule
// with the job's expression and an input naming the job, a job without a
// Schedule (on demand, or chained) has none, and no schedule names a job
// the catalog lacks; every consumer function (one with an SQS event)
// has a Timeout of at least every job's longest item lease (a claim, and
// so a heartbeat, cannot outlive the invocation), and the queue it reads
// hides a message at least as long; every job queue (baton.Job.Queue)
// has its queue, its URL in both functions' BATON_JOB_QUEUE_URLS, an SQS
// event on the consumer with the queue's ScalingConfig.MaximumConcurrency
// and the roles' grants. The error names each job or function that is
// wrong. Call it from a test of your module so that the template
// and the catalog cannot drift apart.
func CheckTemplate(path string, catalog *baton.Catalog) error {
	tpl, err := samtemplate.Load(path)
	if err != nil {
		return err
	}
	return errors.Join(samtemplate.CheckSchedules(tpl, catalog), samtemplate.CheckTimeouts(tpl, catalog), samtemplate.CheckQueues(tpl, catalog))
}

// Run runs the command line args (without the program name) for catalog,
// writing to stdout and stderr, and returns the exit status. ctx's
// cancellation stops a running command (as Ctrl-C does).
func Run(ctx context.Context, catalog *baton.Catalog, args []string, stdout, stderr io.Writer, opts ...Option) int {
	o := apply(opts)
	return cli.MainWith(ctx, o.name, catalog, o.tel, args, stdout, stderr)
}

// Main runs os.Args for catalog until it finishes or the process receives
// SIGINT or SIGTERM, and exits with its status.
func Main(catalog *baton.Catalog, opts ...Option) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, catalog, os.Args[1:], os.Stdout, os.Stderr, opts...)
	stop()
	os.Exit(code)
}
