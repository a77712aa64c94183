package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/ledger"
)

// fixtureAt returns the events/ fixture name with its trigger time (rule
// "time", or "scheduledTime") moved to at, written to a temporary file:
// the fixtures' own time may be in this machine's future.
func fixtureAt(t *testing.T, name string, at string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	require.NoError(t, err)
	var ev map[string]any
	require.NoError(t, json.Unmarshal(raw, &ev))
	for _, field := range []string{"time", "scheduledTime"} {
		if _, ok := ev[field]; ok {
			ev[field] = at
		}
	}
	out, err := json.Marshal(ev)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, out, 0o644))
	return path
}

func TestReplayEveryEventFixture(t *testing.T) {
	t.Parallel()
	names, err := filepath.Glob(filepath.Join("..", "..", "events", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, names)
	for _, path := range names {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newSQLiteFixture(t)
			file := fixtureAt(t, name, rfc(f.tick(3)))
			code, out, errOut := f.main("replay", "event", file, "--log", "error")
			lines := strings.SplitN(out, "\n", 2)
			var resp map[string]any
			require.NoError(t, json.Unmarshal([]byte(lines[0]), &resp), "%s\n%s", out, errOut)
			if strings.HasPrefix(name, "consumer-") {
				require.Contains(t, resp, "batchItemFailures", "routed to the consumer")
				failures := resp["batchItemFailures"].([]any)
				if len(failures) == 0 {
					require.Equal(t, ExitOK, code, errOut)
				} else {
					require.Equal(t, ExitFailure, code, errOut)
				}
				return
			}
			require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
			require.Contains(t, resp, "outcome", "routed to the coordinator")
			require.Equal(t, "opened", resp["outcome"])
			if name == "coordinator-submit.json" {
				require.Equal(t, "fx+desk-request-42#1", resp["run"])
				require.Contains(t, errOut, "follow it with baton status --run fx+desk-request-42#1")
				return
			}
			require.Contains(t, out, "complete — 8 succeeded")
			run, err := f.b.Ledger.GetRun(t.Context(), fx.Name, f.tick(3))
			require.NoError(t, err)
			require.Equal(t, ledger.RunComplete, run.State)
		})
	}
}

func TestReplayEventRoutesAndIsIdempotent(t *testing.T) {
	t.Parallel()
	f := newSQLiteFixture(t)
	ctx := t.Context()
	rule := fixtureAt(t, "coordinator-scheduled.json", rfc(f.tick(1).Add(7*time.Second)))

	code, out, errOut := f.main("replay", "event", rule)
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	require.Contains(t, out, `"run":"`+f.run(1, 1).String()+`"`)
	code, out, errOut = f.main("replay", "event", rule)
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	require.Contains(t, out, `"outcome":"already_fanned_out"`)

	force := fixtureAt(t, "coordinator-replay-force.json", rfc(f.tick(1)))
	code, out, errOut = f.main("replay", "event", force) // FILE after the flags
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	require.Contains(t, out, `"run":"`+f.run(1, 2).String()+`"`)

	// The consumer fixture's items are processed once; its duplicates are
	// not. Its run is the one a coordinator opened for its tick.
	fixtureTick := mustTime(t, "2026-11-21T12:01:00Z")
	opened, _, err := f.b.Ledger.OpenRun(ctx, ledger.OpenRunParams{Job: "fx", Nominal: fixtureTick, Fence: 1, Now: time.Now()})
	require.NoError(t, err)
	_, err = f.b.Ledger.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: opened.ID, Fence: 1, Cursor: len(fx.Assets), Done: true, Now: time.Now()})
	require.NoError(t, err)
	batch := filepath.Join("..", "..", "events", "consumer-batch.json")
	code, out, errOut = f.main("replay", "event", batch)
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	require.Contains(t, out, `{"batchItemFailures":[]}`)
	key := ledger.ItemKey{Run: ledger.RunID{Job: "fx", Nominal: mustTime(t, "2026-11-21T12:01:00Z"), Generation: 1}, Asset: "EURUSD"}
	it, err := f.b.Ledger.GetItem(ctx, key)
	require.NoError(t, err)
	require.Equal(t, ledger.ItemSucceeded, it.State)
	code, _, errOut = f.main("replay", "event", filepath.Join("..", "..", "events", "consumer-batch-duplicates.json"))
	require.Equal(t, ExitOK, code, errOut)
	again, err := f.b.Ledger.GetItem(ctx, key)
	require.NoError(t, err)
	require.Equal(t, it, again)

	// A future trigger is refused by the coordinator.
	future := fixtureAt(t, "coordinator-scheduler.json", "2199-01-01T00:00:00Z")
	code, _, errOut = f.main("replay", "event", future)
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, "future")

	// Bad usage.
	code, _, errOut = f.main("replay", "event")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "takes one event file")
	code, _, errOut = f.main("replay", "event", filepath.Join(t.TempDir(), "missing.json"))
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "no such file")
	notJSON := filepath.Join(t.TempDir(), "x.json")
	require.NoError(t, os.WriteFile(notJSON, []byte("hello"), 0o644))
	code, _, errOut = f.main("replay", "event", notJSON)
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "x.json: invalid character 'h' looking for beginning of value at byte 0")
}

// TestReplayEventRefusesTrailingData: replay event reads an event file as
// invoke does (one JSON value, nothing after it), naming what follows.
func TestReplayEventRefusesTrailingData(t *testing.T) {
	t.Parallel()
	f := newSQLiteFixture(t)
	raw, err := os.ReadFile(fixtureAt(t, "coordinator-scheduled.json", rfc(f.tick(1))))
	require.NoError(t, err)
	for name, tail := range map[string]string{"junk": " junk", "two": `{"force":true}`, "brace": "\n}"} {
		path := filepath.Join(t.TempDir(), name+".json")
		require.NoError(t, os.WriteFile(path, append(append([]byte{}, raw...), tail...), 0o644))
		code, out, errOut := f.main("replay", "event", path)
		require.Equal(t, ExitUsage, code, "%s\n%s", out, errOut)
		first, _, _ := strings.Cut(strings.TrimSpace(tail), " ")
		require.Contains(t, errOut, fmt.Sprintf("%s.json: unexpected %q after the JSON value at byte", name, first))
	}
	_, err = f.b.Ledger.GetRun(t.Context(), fx.Name, f.tick(1))
	require.ErrorIs(t, err, ledger.ErrNotFound, "no refused file opened the tick")
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	return at
}
