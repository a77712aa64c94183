// Package cli implements the baton command: the local runtime (run), the
// Lambda handlers in-process (invoke), set-up of AWS endpoints (setup) and
// the operator commands. Main is the whole program minus signal wiring, so
// tests run it in-process.
//
// Every command is a cobra command with POSIX (pflag) flags: --name value
// or --name=value. A command declares its own flags in its define
// function; the backend flags (--backend, --store, --job, the AWS
// resources) are registered in one place (backendFlags.register) on every
// command that works on a backend, and shown as their own group in help.
// Every command has --json (one JSON object on stdout) and an example.
//
// Exit status: 0 success; 1 the command ran but the outcome is a failure
// (an item ended DEAD, a run did not settle, a batch reported failed
// records, a refused operation); 2 bad usage or bad input (unknown
// command, flag, job, run or asset, bad time).
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/batonhq/baton"
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

// runFunc runs a command whose flags are parsed, with its positional
// arguments.
type runFunc func(ctx context.Context, args []string) error

// command is one command of the tree: a leaf has defineFunc, a group
// (replay, dlq, lease, template) has subs.
type command struct {
	// synopsis is the use line ("replay tick --job J --at T [flags]"),
	// a blank line and the long help.
	synopsis string
	summary  string
	example  string
	// backend: the command works on a backend and takes the backend flags.
	backend bool
	// positional: the command takes positional arguments (it checks them).
	positional bool
	// streams: with --json the command writes JSON lines as it goes (serve)
	// instead of one object at the end.
	streams bool
	// defineFunc registers the command's own flags on fs and returns the
	// function that runs it once they are parsed.
	defineFunc func(e *env, fs *pflag.FlagSet) runFunc
	subs       []command
}

// env is what a command writes to, and the state every command shares:
// the backend flags and the output mode.
type env struct {
	catalog        *baton.Catalog
	stdout, stderr io.Writer
	backend        backendFlags
	logFormat      string
	// json is --json: the command's report is one JSON object on stdout
	// (doc), written when it returns.
	json bool
	doc  map[string]any
	// custom is a report of the command's own shape (status, dlq list,
	// lease show), written instead of doc.
	custom any
	// wroteJSON: the --json report is on stdout (Main then writes no
	// other object for an error).
	wroteJSON bool
	// prog is the program's name ("baton", or a user's binary built with
	// batoncli); progRE finds the command lines of the texts that name
	// "baton" (see named).
	prog   string
	progRE *regexp.Regexp
	// tel is the binary's telemetry (MainWith, NewRootCommandWith).
	tel Telemetry
}

// named returns s with the command lines it quotes ("baton status",
// 'baton dlq redrive', "baton --help") naming the program instead:
// a user's binary serves these commands, not a binary called baton.
func (e *env) named(s string) string {
	if e.progRE == nil || e.prog == "baton" {
		return s
	}
	return e.progRE.ReplaceAllString(s, "${1}"+strings.ReplaceAll(e.prog, "$", "$$")+"${2}")
}

// commandLine matches "baton" followed by one of names, --help or
// --version, where it starts a command line (not inside a path or a
// longer word).
func commandLine(names []string) *regexp.Regexp {
	alt := make([]string, len(names))
	for i, n := range names {
		alt[i] = regexp.QuoteMeta(n) + `\b`
	}
	return regexp.MustCompile(`(^|[^\w./$-])baton( (?:` + strings.Join(alt, "|") + `|--help\b|--version\b|<command>))`)
}

// sayf prints one line of the report: on stdout, or, with --json, in
// the report's "messages".
func (e *env) sayf(format string, args ...any) {
	if e.json {
		e.doc["messages"] = append(e.doc["messages"].([]string), e.named(strings.TrimSuffix(fmt.Sprintf(format, args...), "\n")))
		return
	}
	fmt.Fprint(e.stdout, e.named(fmt.Sprintf(format, args...)))
}

// text is where the report's tables go: stdout, or nowhere with --json
// (the command sets their data with set).
func (e *env) text() io.Writer {
	if e.json {
		return io.Discard
	}
	return e.stdout
}

// set sets a field of the --json report.
func (e *env) set(key string, v any) {
	if e.json {
		e.doc[key] = v
	}
}

// writeJSON writes the --json report of a command that returned err.
func (e *env) writeJSON(err error) {
	var doc any = e.doc
	if e.custom != nil {
		doc = e.custom
	} else if err != nil && !errors.Is(err, errFailed) {
		e.doc["error"] = e.named(err.Error())
	}
	if e.custom == nil && err != nil {
		e.doc["ok"] = false
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(doc)
	e.wroteJSON = true
}

func (c command) name() string { return strings.Fields(c.synopsis)[0] }

func commands() []command {
	return []command{
		runCommand(),
		serveCommand(),
		uiCommand(),
		statusCommand(),
		{synopsis: "replay <subcommand> [flags]\n\n" + replayAbout, summary: "run a tick, a range of ticks (backfill), an item or an event again",
			example: "  baton replay tick --at 2026-11-21T12:01:00Z\n  baton replay range --from 2026-11-21T00:00:00Z --to 2026-11-22T00:00:00Z --dry-run",
			subs:    replaySubcommands()},
		{synopsis: "dlq <subcommand> [flags]\n\n" + dlqAbout, summary: "list, redrive and purge the dead-letter queue",
			example: "  baton dlq list --json\n  baton dlq redrive --max 10\n  baton dlq purge --yes", subs: dlqSubcommands()},
		{synopsis: "lease <subcommand> [flags]\n\n" + leaseAbout, summary: "show a job's lease; release one whose holder is dead",
			example: "  baton lease show --job fx", subs: leaseSubcommands()},
		lockCommand(),
		submitCommand(),
		cancelCommand(),
		pauseCommands()[0],
		pauseCommands()[1],
		invokeCommand(),
		{synopsis: "template <subcommand> [flags]\n\n" + templateAbout, summary: "check a SAM template's schedules against the catalog",
			example: "  baton template check --template template.yaml", subs: templateSubcommands()},
		versionCommand(),
		setupCommand(),
	}
}

// Main runs the baton command for catalog with args (without the program
// name) and returns the exit status.
func Main(ctx context.Context, catalog *baton.Catalog, args []string, stdout, stderr io.Writer) int {
	return MainAs(ctx, "baton", catalog, args, stdout, stderr)
}

// MainAs is Main for a program called prog (a user's binary built with
// batoncli): usage lines, help examples and error messages name prog.
func MainAs(ctx context.Context, prog string, catalog *baton.Catalog, args []string, stdout, stderr io.Writer) int {
	return MainWith(ctx, prog, catalog, Telemetry{}, args, stdout, stderr)
}

// MainWith is MainAs with the binary's telemetry: the commands that run
// work trace, measure and log through it.
func MainWith(ctx context.Context, prog string, catalog *baton.Catalog, tel Telemetry, args []string, stdout, stderr io.Writer) int {
	root, e := newRoot(catalog, prog, stdout, stderr)
	e.tel = tel
	root.SetArgs(args)
	e.stdout, e.stderr = stdout, stderr
	cmd, err := root.ExecuteContextC(ctx)
	code := exitStatus(err)
	if err == nil || errors.Is(err, errFailed) {
		return code
	}
	name := root.Name()
	if cmd != nil && cmd != root {
		name = root.Name() + " " + strings.TrimPrefix(cmd.CommandPath(), root.Name()+" ")
	}
	msg := e.named(strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; "))
	bare := msg // without the hint for people
	if cmd == root && code == ExitUsage {
		msg += fmt.Sprintf(" (run '%s --help' for the commands)", root.Name())
	} else if code == ExitUsage && cmd != nil && !strings.Contains(msg, "--help") {
		msg += fmt.Sprintf(" (run '%s --help')", name)
	}
	if !e.wroteJSON && wantsJSON(args) {
		// --json promises one JSON object on stdout, a usage error's too
		// (a failure's report is written by the command itself).
		e.doc = map[string]any{"command": strings.TrimPrefix(strings.TrimPrefix(name, root.Name()), " "), "ok": false,
			"messages": []string{}, "error": bare, "exit_status": code}
		e.custom = nil
		e.writeJSON(nil)
	}
	fmt.Fprintf(stderr, "%s: %s\n", name, msg)
	return code
}

// wantsJSON reports whether args ask for --json (before any "--"), even
// when parsing them stopped before reaching it.
func wantsJSON(args []string) bool {
	for _, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--json":
			return true
		case strings.HasPrefix(a, "--json="):
			v, err := strconv.ParseBool(strings.TrimPrefix(a, "--json="))
			return err == nil && v
		}
	}
	return false
}

// exitStatus is the exit-status contract: nil 0, errFailed and other
// failures 1, usage errors 2.
func exitStatus(err error) int {
	var u usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &u):
		return ExitUsage
	}
	return ExitFailure
}

const rootLong = `baton runs scheduled fan-out work: a coordinator takes a fenced lease per job,
opens the run for each tick and enqueues one message per asset; consumers
process each asset exactly once per run; derived items run when their inputs
have succeeded.

Flags are POSIX style (--name value or --name=value). The embedded store is
a SQLite file (default var/baton.db); several baton processes may use it at
once. Every command prints one JSON object on stdout with --json, a
usage error's too ({"command", "ok": false, "error", "exit_status": 2}).

Exit status:
  0  success, or nothing to do (a finished tick replayed without --force,
     a lease already free)
  1  the command ran but the outcome is a failure: an item ended DEAD, a
     batch reported failed records, a run did not settle within --timeout,
     an operation was refused (a live lease, a terminal item, the job's
     lease held by another coordinator), a backfill stopped early (run the
     same command again to resume)
  2  bad usage or input: unknown command, flag, job, run or asset; a bad or
     future time; an empty, inverted or too large range
See RUNBOOK.md for the operator's procedures.`

// NewRootCommand returns the baton command tree serving catalog: the
// commands of commands() and, for the groups, their subcommands, and
// shell completion. Its errors are returned, not printed: Main maps them
// to exit statuses.
func NewRootCommand(catalog *baton.Catalog) *cobra.Command {
	return NewRootCommandAs(catalog, "baton")
}

// NewRootCommandAs is NewRootCommand for a program called prog: its root
// command is prog, and its help and errors name prog.
func NewRootCommandAs(catalog *baton.Catalog, prog string) *cobra.Command {
	return NewRootCommandWith(catalog, prog, Telemetry{})
}

// NewRootCommandWith is NewRootCommandAs with the binary's telemetry (see
// MainWith).
func NewRootCommandWith(catalog *baton.Catalog, prog string, tel Telemetry) *cobra.Command {
	root, e := newRoot(catalog, prog, nil, nil)
	e.tel = tel
	return root
}

// newRoot builds the tree writing to stdout and stderr (nil: the
// process's, or what SetOut and SetErr say later).
func newRoot(catalog *baton.Catalog, prog string, stdout, stderr io.Writer) (*cobra.Command, *env) {
	if prog == "" {
		prog = "baton"
	}
	e := &env{catalog: catalog, prog: prog}
	root := &cobra.Command{
		Use:           prog,
		Short:         "scheduled fan-out work you can trust on serverless",
		Long:          rootLong,
		Example:       "  baton run --once\n  baton status --json\n  source <(baton completion bash)",
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
			return cmd.Help()
		},
	}
	root.SetVersionTemplate("baton {{.Version}}\n")
	root.PersistentFlags().StringVar(&e.logFormat, "log-format", "text", "format of the logs on stderr: text or json")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{flagError(err)} })
	root.SetUsageFunc(usage)
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		e.stdout, e.stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
		if e.logFormat != "text" && e.logFormat != "json" {
			return usagef("--log-format %q: want text or json", e.logFormat)
		}
		return nil
	}
	for _, c := range commands() {
		root.AddCommand(build(e, c, ""))
	}
	if stdout != nil {
		root.SetOut(stdout) // before the completion command, which keeps it
	}
	if stderr != nil {
		root.SetErr(stderr)
	}
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Example = "  baton help replay range"
		case "completion":
			c.Example = "  source <(baton completion bash)\n  baton completion zsh > \"${fpath[1]}/_baton\""
			for _, s := range c.Commands() {
				s.Example = "  baton completion " + s.Name() + " --help"
			}
		}
	}
	var names []string
	for _, c := range root.Commands() {
		names = append(names, c.Name())
	}
	e.progRE = commandLine(names)
	nameTree(e, root)
	return root, e
}

// nameTree makes the help of cmd and its subcommands name the program:
// their long help, examples and flag usages.
func nameTree(e *env, cmd *cobra.Command) {
	if e.prog == "baton" {
		return
	}
	cmd.Long, cmd.Example = e.named(cmd.Long), e.named(cmd.Example)
	for _, fs := range []*pflag.FlagSet{cmd.LocalNonPersistentFlags(), cmd.PersistentFlags()} {
		fs.VisitAll(func(f *pflag.Flag) { f.Usage = e.named(f.Usage) })
	}
	for _, c := range cmd.Commands() {
		nameTree(e, c)
	}
}

// build makes the cobra command of c, a subcommand of group when that
// is not "" (its synopsis then starts with the group's name).
func build(e *env, c command, group string) *cobra.Command {
	use, long, _ := strings.Cut(c.synopsis, "\n\n")
	use = strings.TrimPrefix(use, group+" ")
	cmd := &cobra.Command{Use: use, Short: c.summary, Long: strings.TrimSpace(long), Example: c.example}
	if len(c.subs) > 0 {
		verbs := make([]string, len(c.subs))
		for i, s := range c.subs {
			sub := build(e, s, cmd.Name())
			verbs[i] = sub.Name()
			cmd.AddCommand(sub)
		}
		cmd.Args = cobra.ArbitraryArgs
		// "baton replay everything --store x" says the verb is unknown,
		// not the flag.
		cmd.FParseErrWhitelist.UnknownFlags = true
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && args[0] == "help" {
				return cmd.Help()
			}
			if len(args) == 0 {
				return usagef("%s needs a subcommand (%s)", cmd.Name(), strings.Join(verbs, ", "))
			}
			return usagef("unknown subcommand %q (want %s)", args[0], strings.Join(verbs, ", "))
		}
		return cmd
	}
	fs := cmd.Flags()
	if c.backend {
		e.backend.register(fs)
		fs.VisitAll(func(f *pflag.Flag) { _ = fs.SetAnnotation(f.Name, flagGroup, []string{backendGroup}) })
		// Shell completion of the values a user would otherwise look up.
		_ = cmd.RegisterFlagCompletionFunc("job", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return e.catalog.Names(), cobra.ShellCompDirectiveNoFileComp
		})
		_ = cmd.RegisterFlagCompletionFunc("backend", cobra.FixedCompletions(backendNames, cobra.ShellCompDirectiveNoFileComp))
	}
	run := c.defineFunc(e, fs)
	jsonUsage := "print the report as one JSON object on stdout"
	if c.streams {
		jsonUsage = "report as JSON lines on stdout"
	}
	fs.BoolVar(&e.json, "json", false, jsonUsage)
	cmd.Args = func(_ *cobra.Command, args []string) error {
		if !c.positional && len(args) > 0 {
			return usagef("unexpected argument %q", args[0])
		}
		return nil
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		e.doc = map[string]any{"command": strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" "), "ok": true, "messages": []string{}}
		err := run(cmd.Context(), args)
		if e.json && !c.streams && (err == nil || exitStatus(err) == ExitFailure || e.custom != nil) {
			e.writeJSON(err)
		}
		return err
	}
	return cmd
}

// badValue is pflag's error for a value its type refuses.
var badValue = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-\w, )?(--[\w-]+)" flag: (.*)$`)

// flagError says what is wrong with a flag's value in words, not in the
// terms of Go's parsers (strconv.ParseInt: parsing "x": invalid syntax).
func flagError(err error) error {
	m := badValue.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	want := "not a valid value"
	switch reason := m[3]; {
	case strings.Contains(reason, "ParseInt"), strings.Contains(reason, "ParseUint"):
		want = "not a whole number"
		if strings.Contains(reason, "out of range") {
			want = "out of range"
		}
	case strings.Contains(reason, "ParseFloat"):
		want = "not a number"
	case strings.Contains(reason, "ParseBool"):
		want = "not true or false"
	case strings.Contains(reason, "time: "):
		want = "not a duration such as 30s, 2m or 1h30m"
	}
	return fmt.Errorf("%s %q: %s", m[2], m[1], want)
}

// Flag groups in help.
const (
	flagGroup    = "baton_group"
	backendGroup = "backend"
)

// usage prints a command's usage: its own flags, then the backend flags
// as one group, then the flags every command has.
func usage(cmd *cobra.Command) error {
	w := cmd.OutOrStderr()
	fmt.Fprint(w, "Usage:\n")
	if cmd.Runnable() {
		fmt.Fprintf(w, "  %s\n", cmd.UseLine())
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(w, "  %s <command>\n", cmd.CommandPath())
	}
	if cmd.HasExample() {
		fmt.Fprintf(w, "\nExamples:\n%s\n", cmd.Example)
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprint(w, "\nCommands:\n")
		for _, s := range cmd.Commands() {
			if s.IsAvailableCommand() || s.Name() == "help" {
				fmt.Fprintf(w, "  %-10s %s\n", s.Name(), s.Short)
			}
		}
	}
	own, backend := pflag.NewFlagSet("own", pflag.ContinueOnError), pflag.NewFlagSet("backend", pflag.ContinueOnError)
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if g := f.Annotations[flagGroup]; len(g) > 0 && g[0] == backendGroup {
			backend.AddFlag(f)
			return
		}
		own.AddFlag(f)
	})
	for _, s := range []struct {
		title string
		fs    *pflag.FlagSet
	}{{"Flags", own}, {"Backend flags", backend}, {"Global flags", cmd.InheritedFlags()}} {
		if s.fs.HasAvailableFlags() {
			fmt.Fprintf(w, "\n%s:\n%s", s.title, s.fs.FlagUsages())
		}
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\nRun '%s <command> --help' for a command's flags.\n", cmd.CommandPath())
	}
	return nil
}
