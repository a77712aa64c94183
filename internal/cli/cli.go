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
	run     func(ctx context.Context, env *env, args []string) error
}

// env is what a command writes to.
type env struct {
	stdout, stderr io.Writer
}

func commands() []command {
	return []command{
		{"run", "run the job's ticks end to end (--once: one tick, then a report)", runCmd},
		{"status", "show leases, recent runs, item states and staleness", statusCmd},
		{"replay", "run a tick, a range of ticks (backfill) or an item again", replayCmd},
		{"dlq", "list and redrive the dead-letter queue", dlqCmd},
		{"lease", "show a job's lease; release one whose holder is dead", leaseCmd},
		{"cancel", "cancel a run's items (or one item) that are not terminal", cancelCmd},
		{"invoke", "run a Lambda function's handler on an event file, in-process", invokeCmd},
		{"setup", "create the DynamoDB table and SQS queues (with redrive) for --backend aws", setupCmd},
	}
}

// Main runs the baton command with args (without the program name) and
// returns the exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			return Main(ctx, []string{args[1], "--help"}, stdout, stderr)
		}
		printUsage(stdout)
		return ExitOK
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, e, args[1:])
		switch {
		case err == nil, errors.Is(err, flag.ErrHelp):
			return ExitOK
		case errors.Is(err, errFailed):
			return ExitFailure
		}
		fmt.Fprintf(stderr, "baton %s: %v\n", c.name, err)
		var u usageError
		if errors.As(err, &u) {
			return ExitUsage
		}
		return ExitFailure
	}
	fmt.Fprintf(stderr, "baton: unknown command %q\n\n", args[0])
	printUsage(stderr)
	return ExitUsage
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
