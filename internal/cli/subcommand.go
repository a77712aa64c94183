package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// subcommand is one verb of a command group (baton lease show, …).
type subcommand struct {
	name    string
	summary string
	runFunc func(ctx context.Context, e *env, args []string) error
}

// dispatch runs the subcommand args[0] of the group name. No verb, or
// help, prints the group's verbs; an unknown verb is bad usage.
func dispatch(ctx context.Context, e *env, name, about string, subs []subcommand, args []string) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) == 0 {
			printSubcommands(e.stderr, name, about, subs)
			return usagef("%s needs a subcommand (%s)", name, verbs(subs))
		}
		printSubcommands(e.stdout, name, about, subs)
		return nil
	}
	if strings.HasPrefix(args[0], "-") {
		printSubcommands(e.stderr, name, about, subs)
		return usagef("%s needs a subcommand (%s) before its flags", name, verbs(subs))
	}
	for _, s := range subs {
		if s.name == args[0] {
			return s.runFunc(ctx, e, args[1:])
		}
	}
	return usagef("unknown subcommand %q (want %s)", args[0], verbs(subs))
}

func verbs(subs []subcommand) string {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.name
	}
	return strings.Join(names, ", ")
}

func printSubcommands(w io.Writer, name, about string, subs []subcommand) {
	fmt.Fprintf(w, "Usage: baton %s <subcommand> [flags]\n\n%s\n\nSubcommands:\n", name, strings.TrimSpace(about))
	for _, s := range subs {
		fmt.Fprintf(w, "  %-8s %s\n", s.name, s.summary)
	}
	fmt.Fprintf(w, "\nRun 'baton %s <subcommand> --help' for its flags.\n", name)
}
