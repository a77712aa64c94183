package batoncli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batoncli"
)

// twoJobs is a user's catalog of two jobs, each with items of its own.
func twoJobs(t *testing.T) *baton.Catalog {
	t.Helper()
	echo := baton.ProcessorFunc(func(_ context.Context, t baton.Task) ([]byte, error) { return []byte("done " + t.Asset), nil })
	cat, err := baton.NewCatalog(
		baton.Job{Name: "ingest", Schedule: "rate(1 minute)", Assets: []string{"a", "b"}, Processor: echo},
		baton.Job{Name: "report", Schedule: "rate(5 minutes)", Assets: []string{"pdf"}, Processor: echo},
	)
	require.NoError(t, err)
	return cat
}

// mybaton runs the user's binary, called mybaton, in-process.
func mybaton(t *testing.T, cat *baton.Catalog, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := batoncli.Run(t.Context(), cat, args, &out, &errOut, batoncli.Name("mybaton"))
	return code, out.String(), errOut.String()
}

// A user's first look at a catalog of several jobs shows every job: one
// section each, and with --json one object with a "jobs" list; --job
// narrows it to one job's report; an unknown --job is bad usage that
// names it and the jobs there are.
func TestStatusOfSeveralJobs(t *testing.T) {
	t.Parallel()
	cat := twoJobs(t)
	store := filepath.Join(t.TempDir(), "baton.db")
	code, out, errOut := mybaton(t, cat, "run", "--once", "--store", store)
	require.Equal(t, batoncli.ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)

	code, out, errOut = mybaton(t, cat, "status", "--store", store)
	require.Equal(t, batoncli.ExitOK, code, errOut)
	require.Regexp(t, `(?m)^=== job ingest \(1 of 2`, out)
	require.Regexp(t, `(?m)^=== job report \(2 of 2`, out)
	require.Regexp(t, `(?m)^job ingest, schedule rate\(1 minute\)`, out)
	require.Regexp(t, `(?m)^job report, schedule rate\(5 minutes\)`, out)
	require.Regexp(t, `(?m)^pdf\s+`+regexp.QuoteMeta("20"), out, "report's asset with its last success")

	code, out, errOut = mybaton(t, cat, "status", "--store", store, "--json")
	require.Equal(t, batoncli.ExitOK, code, errOut)
	var all struct {
		Backend string `json:"backend"`
		Jobs    []struct {
			Job  string `json:"job"`
			Runs []struct {
				State string `json:"state"`
			} `json:"runs"`
		} `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &all), out)
	require.Equal(t, "sqlite", all.Backend)
	require.Len(t, all.Jobs, 2)
	for i, name := range []string{"ingest", "report"} {
		require.Equal(t, name, all.Jobs[i].Job)
		require.Len(t, all.Jobs[i].Runs, 1, name)
		require.Equal(t, "complete", all.Jobs[i].Runs[0].State, name)
	}

	code, out, errOut = mybaton(t, cat, "status", "--store", store, "--job", "report", "--json")
	require.Equal(t, batoncli.ExitOK, code, errOut)
	var one map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &one), out)
	require.Equal(t, "report", one["job"])
	require.NotContains(t, one, "jobs")
	code, out, _ = mybaton(t, cat, "status", "--store", store, "--job", "report")
	require.Equal(t, batoncli.ExitOK, code)
	require.NotContains(t, out, "job ingest")
	require.Contains(t, out, "job report")

	code, out, errOut = mybaton(t, cat, "status", "--store", store, "--job", "nope")
	require.Equal(t, batoncli.ExitUsage, code)
	require.Empty(t, out)
	require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
	require.True(t, strings.HasPrefix(errOut, "mybaton status: "), errOut)
	require.Contains(t, errOut, `unknown job "nope" (known: ingest, report)`)
}

// A user's binary names itself, not baton, in its usage lines, help
// examples and error messages.
func TestUsersBinaryNamesItself(t *testing.T) {
	t.Parallel()
	cat := twoJobs(t)
	code, out, _ := mybaton(t, cat, "status", "--help")
	require.Equal(t, batoncli.ExitOK, code)
	require.Contains(t, out, "Usage:\n  mybaton status")
	require.Contains(t, out, "  mybaton status --job fx --json")
	require.Contains(t, out, "'mybaton replay item'")
	require.NotRegexp(t, `\bbaton (status|replay|dlq|--help)`, out)

	code, out, _ = mybaton(t, cat, "dlq", "redrive", "--help")
	require.Equal(t, batoncli.ExitOK, code)
	require.Contains(t, out, "'mybaton dlq list' shows beforehand")
	require.NotRegexp(t, `\bbaton (status|replay|dlq|--help)`, out)

	code, _, errOut := mybaton(t, cat, "frobnicate")
	require.Equal(t, batoncli.ExitUsage, code)
	require.Equal(t, "mybaton: unknown command \"frobnicate\" (run 'mybaton --help' for the commands)\n", errOut)

	code, _, errOut = mybaton(t, cat, "lease", "show")
	require.Equal(t, batoncli.ExitUsage, code)
	require.True(t, strings.HasPrefix(errOut, "mybaton lease show: --job is required"), errOut)
	require.Contains(t, errOut, "(run 'mybaton lease show --help')")

	code, _, errOut = mybaton(t, cat, "status", "--store", filepath.Join(t.TempDir(), "none.db"))
	require.Equal(t, batoncli.ExitUsage, code)
	require.Contains(t, errOut, "'mybaton run'", "a hint of an error names the binary")

	// Without the option, the program's own name.
	var out2, errOut2 bytes.Buffer
	code = batoncli.Run(t.Context(), cat, []string{"frobnicate"}, &out2, &errOut2)
	require.Equal(t, batoncli.ExitUsage, code)
	require.True(t, strings.HasPrefix(errOut2.String(), "batoncli.test: unknown command"), errOut2.String())
}
