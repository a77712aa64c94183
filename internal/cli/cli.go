// Package cli implements the baton command: the local runtime (run), the
// Lambda handlers in-process (invoke), set-up of AWS endpoints (setup) and
// the operator commands. Main is the whole program minus signal wiring, so
// tests run it in-process.
//
// Exit status: 0 success; 1 the command ran but the outcome is a failure
// (an item ended DEAD, a run did not settle, a refused operation); 2 bad
// usage or bad input (unknown command, flag, job, run or asset, bad time).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/batonhq/baton"
	"github.com/spf13/cobra"
)

// Exit statuses.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// usageError marks an error as bad usage or bad input (exit status 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// errFailed reports an outcome that is a failure (exit status 1) after the
// command already printed why.
var errFailed = errors.New("failed")

type command struct {
	name    string
	summary string
	runFunc func(ctx context.Context, env *env, args []string) error
	// A group (replay, dlq, lease) has subcommands and an about text
	// instead of run.
	about    string
	subsFunc func() []subcommand
}

// env is what a command writes to.
type env struct {
	catalog        *baton.Catalog
	stdout, stderr io.Writer
}

func commands() []command {
	return []command{
		{name: "run", summary: "run the job's ticks end to end (--once: one tick, then a report)", runFunc: runCmd},
		{name: "serve", summary: "serve the coordinator over HTTP (CloudEvents, JSON) and run the pull consumers", runFunc: serveCmd},
		{name: "ui", summary: "serve a web dashboard: runs, timelines, staleness, lease, dead letters, actions", runFunc: uiCmd},
		{name: "status", summary: "show leases, recent runs, item states and staleness", runFunc: statusCmd},
		{name: "replay", summary: "run a tick, a range of ticks (backfill) or an item again", about: replayAbout, subsFunc: replaySubcommands},
		{name: "dlq", summary: "list and redrive the dead-letter queue", about: dlqAbout, subsFunc: dlqSubcommands},
		{name: "lease", summary: "show a job's lease; release one whose holder is dead", about: leaseAbout, subsFunc: leaseSubcommands},
		{name: "cancel", summary: "cancel a run's items (or one item) that are not terminal", runFunc: cancelCmd},
		{name: "invoke", summary: "run a Lambda function's handler on an event file, in-process", runFunc: invokeCmd},
		{name: "template", summary: "check a SAM template's schedules against the catalog", about: templateAbout, subsFunc: templateSubcommands},
		{name: "version", summary: "print baton's version", runFunc: versionCmd},
		{name: "setup", summary: "create the DynamoDB table and SQS queues (with redrive) for --backend aws", runFunc: setupCmd},
	}
}

// Main runs the baton command for catalog with args (without the program
// name) and returns the exit status.
func Main(ctx context.Context, catalog *baton.Catalog, args []string, stdout, stderr io.Writer) int {
	root := NewRootCommand(catalog)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.Is(err, errFailed):
		return ExitFailure
	}
	name := "baton"
	if cmd != nil && cmd != root {
		name = "baton " + strings.TrimPrefix(cmd.CommandPath(), root.Name()+" ")
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	var u usageError
	if errors.As(err, &u) {
		if cmd == root {
			fmt.Fprintln(stderr)
			printUsage(stderr)
		}
		return ExitUsage
	}
	return ExitFailure
}

// NewRootCommand returns the baton command tree serving catalog: the
// commands of commands() and, for the groups, their subcommands. Each
// command parses its own flags (Go flag syntax: -flag or --flag). Its
// errors are returned, not printed: Main maps them to exit statuses.
func NewRootCommand(catalog *baton.Catalog) *cobra.Command {
	e := &env{catalog: catalog}
	root := &cobra.Command{
		Use:           "baton",
		Short:         "scheduled fan-out work you can trust on serverless",
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version(),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			printUsage(cmd.OutOrStdout())
			return nil
		},
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: true},
	}
	root.SetVersionTemplate("baton {{.Version}}\n")
	root.SetHelpFunc(func(cmd *cobra.Command, _ []string) {
		if cmd == root {
			printUsage(cmd.OutOrStdout())
			return
		}
		_ = cmd.RunE(cmd, []string{"--help"})
	})
	bind := func(cmd *cobra.Command, run func(ctx context.Context, e *env, args []string) error) {
		cmd.DisableFlagParsing = true
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			e.stdout, e.stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			return run(cmd.Context(), e, args)
		}
	}
	for _, c := range commands() {
		cmd := &cobra.Command{Use: c.name, Short: c.summary}
		if c.subsFunc == nil {
			bind(cmd, c.runFunc)
			root.AddCommand(cmd)
			continue
		}
		subs := c.subsFunc()
		bind(cmd, func(ctx context.Context, e *env, args []string) error {
			return dispatch(ctx, e, c.name, c.about, subs, args)
		})
		for _, s := range subs {
			sub := &cobra.Command{Use: s.name, Short: s.summary}
			bind(sub, s.runFunc)
			cmd.AddCommand(sub)
		}
		root.AddCommand(cmd)
	}
	return root
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `baton runs scheduled fan-out work: a coordinator takes a fenced lease per job,
opens the run for each tick and enqueues one message per asset; consumers
process each asset exactly once per run; derived items run when their inputs
have succeeded.

Usage:
  baton <command> [flags]

Commands:
`)
	cs := commands()
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	for _, c := range cs {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Run 'baton <command> --help' for a command's flags.
The embedded store is a SQLite file (default var/baton.db); several baton
processes may use it at once.

Exit status:
  0  success, or nothing to do (a finished tick replayed without --force,
     a lease already free)
  1  the command ran but the outcome is a failure: an item ended DEAD, a
     run did not settle within --timeout, an operation was refused (a live
     lease, a terminal item, the job's lease held by another coordinator),
     a backfill stopped early (run the same command again to resume)
  2  bad usage or input: unknown command, flag, job, run or asset; a bad or
     future time; an inverted range or one with too many ticks
See RUNBOOK.md for the operator's procedures.
`)
}

// newFlagSet returns a flag set whose usage output starts with synopsis.
func newFlagSet(e *env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: baton %s\n\n%s\n\nFlags:\n", name, strings.TrimSpace(synopsis))
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and turns flag errors into usage errors.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}
