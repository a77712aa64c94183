package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
)

// walk calls f on cmd and every command below it.
func walk(cmd *cobra.Command, f func(*cobra.Command)) {
	f(cmd)
	for _, c := range cmd.Commands() {
		walk(c, f)
	}
}

// TestEveryCommandHasExampleAndJSON walks the command tree: every
// command's help shows an example, and every command of baton's own
// (all but cobra's help and completion) reports with --json; its flags
// are POSIX long flags.
func TestEveryCommandHasExampleAndJSON(t *testing.T) {
	t.Parallel()
	root := NewRootCommand(fx.Catalog(nil))
	n := 0
	walk(root, func(c *cobra.Command) {
		n++
		path := c.CommandPath()
		require.NotEmpty(t, strings.TrimSpace(c.Example), "%s has no example", path)
		args := append(strings.Fields(strings.TrimPrefix(path, "baton")), "--help")
		code, out, errOut := runMain(t, args...)
		require.Equal(t, ExitOK, code, "%s --help: %s", path, errOut)
		require.Contains(t, out, "Examples:\n"+c.Example, path)
		builtin := strings.HasPrefix(path, "baton completion") || path == "baton help"
		if !c.Runnable() || c.HasSubCommands() || builtin {
			return
		}
		require.NotNil(t, c.Flags().Lookup("json"), "%s has no --json", path)
		require.Contains(t, out, "--json", path)
	})
	require.Greater(t, n, 15)
}

// TestJSONReports: a reporting command's --json is one JSON object on
// stdout, for a success and a failure alike, with the exit status of the
// contract.
func TestJSONReports(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "baton.db")
	code, out, errOut := runMain(t, "run", "--once", "--store", store, "--json")
	require.Equal(t, ExitOK, code, errOut)
	var run struct {
		Command     string        `json:"command"`
		OK          bool          `json:"ok"`
		Messages    []string      `json:"messages"`
		Coordinator summaryReport `json:"coordinator"`
		Items       []itemStatus  `json:"items"`
		Run         runStatus     `json:"run"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &run), out)
	require.Equal(t, "run", run.Command)
	require.True(t, run.OK)
	require.Equal(t, "opened", run.Coordinator.Outcome)
	require.Len(t, run.Items, 8)
	require.Equal(t, "complete", run.Run.State)
	require.Equal(t, 8, run.Run.Items["SUCCEEDED"])

	// A usage error: status 2, one JSON object on stdout, one line on
	// stderr.
	code, out, errOut = runMain(t, "replay", "range", "--store", store, "--from", "2026-11-21T00:00:00Z", "--to", "2026-11-21T00:00:00Z", "--json")
	require.Equal(t, ExitUsage, code)
	var usage map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &usage), out)
	require.Equal(t, false, usage["ok"])
	require.Equal(t, "replay range", usage["command"])
	require.Contains(t, usage["error"], "empty range")
	require.Contains(t, errOut, "empty range")
	require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)

	// A refused operation: status 1 and the report says why.
	code, out, _ = runMain(t, "cancel", "--store", store, "--run", run.Run.ID, "--asset", "EURUSD", "--json")
	require.Equal(t, ExitFailure, code)
	var rel map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &rel), out)
	require.Equal(t, false, rel["ok"])
	require.Contains(t, rel["error"], "refused: "+run.Run.ID+"/EURUSD is already SUCCEEDED")

	code, out, _ = runMain(t, "version", "--json")
	require.Equal(t, ExitOK, code)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	require.NotEmpty(t, v["version"])
}

// TestRangeToIsExcluded: a day of a minute job is 1,440 ticks, and two
// consecutive days share no tick.
func TestRangeToIsExcluded(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "baton.db")
	code, _, errOut := runMain(t, "run", "--once", "--store", store) // creates the store
	require.Equal(t, ExitOK, code, errOut)
	ticks := func(from, to string) []string {
		code, out, errOut := runMain(t, "replay", "range", "--store", store, "--from", from, "--to", to, "--dry-run", "--json")
		require.Equal(t, ExitOK, code, errOut)
		var rep struct {
			Ticks []struct {
				Tick string `json:"tick"`
			} `json:"ticks"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
		var list []string
		for _, tk := range rep.Ticks {
			list = append(list, tk.Tick)
		}
		return list
	}
	day1 := ticks("2026-11-20T00:00:00Z", "2026-11-21T00:00:00Z")
	require.Len(t, day1, 1440)
	require.Equal(t, "2026-11-20T00:00:00Z", day1[0])
	require.Equal(t, "2026-11-20T23:59:00Z", day1[len(day1)-1])
	day2 := ticks("2026-11-21T00:00:00Z", "2026-11-21T00:02:00Z")
	require.Equal(t, []string{"2026-11-21T00:00:00Z", "2026-11-21T00:01:00Z"}, day2)
}

// TestFlagErrorsInWords: a bad flag value is named with what is wrong, in
// one line, without the terms of Go's parsers.
func TestFlagErrorsInWords(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"status --runs x":                    `--runs "x": not a whole number`,
		"replay range --rate fast":           `--rate "fast": not a number`,
		"run --once --timeout soon":          `--timeout "soon": not a duration such as 30s, 2m or 1h30m`,
		"replay tick --wait=maybe":           `--wait "maybe": not true or false`,
		"replay tick --at 21/11/2026":        `--at: invalid RFC 3339 time: "21/11/2026"`,
		"status --runs 99999999999999999999": `--runs "99999999999999999999": out of range`,
	} {
		code, _, errOut := runMain(t, strings.Fields(args)...)
		require.Equal(t, ExitUsage, code, args)
		require.Contains(t, errOut, want, args)
		require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
		for _, goism := range []string{"strconv", "Parse", "2006", "time: invalid"} {
			require.NotContains(t, errOut, goism, args)
		}
	}
}

// TestCompletion: the completion scripts are there, and the values of
// --job and --backend complete.
func TestCompletion(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		code, out, errOut := runMain(t, "completion", shell)
		require.Equal(t, ExitOK, code, errOut)
		require.Contains(t, out, "baton", shell)
	}
	code, out, _ := runMain(t, "__complete", "status", "--job", "")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "fx\n")
	code, out, _ = runMain(t, "__complete", "replay", "tick", "--backend", "")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "aws\npostgres\nsqlite\n", "every engine the binary links")
}

// TestExitContractSameBatch: the same failed batch exits 1 through
// 'invoke consumer' and through 'replay event', as the contract says.
func TestExitContractSameBatch(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "baton.db")
	event := eventFile("consumer-batch-malformed.json")
	code, _, errOut := runMain(t, "invoke", "consumer", "--event", event, "--store", store, "--log", "error")
	require.Equal(t, ExitFailure, code, errOut)
	code, _, errOut = runMain(t, "replay", "event", event, "--store", store, "--log", "error")
	require.Equal(t, ExitFailure, code, errOut)
	code, _, _ = runMain(t, "replay", "event", "--store", store)
	require.Equal(t, ExitUsage, code, "no event file")
}
