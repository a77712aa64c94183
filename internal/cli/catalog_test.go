package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
)

// newcomerCatalog is the first-day module of a new user: a run-time list
// of 25 feeds on a schedule, whose finish chains a summary over their
// results (no schedule of its own), and an on-demand reindex job (no
// schedule: submissions only) on a queue of its own.
func newcomerCatalog(t *testing.T) *baton.Catalog {
	t.Helper()
	feeds := make([]baton.Item, 25)
	for i := range feeds {
		feeds[i] = baton.Item{Name: fmt.Sprintf("feed-%02d", i), Payload: []byte(strconv.Itoa(i + 1))}
	}
	cat, err := baton.NewCatalog(
		baton.Job{Name: "feeds", Schedule: "rate(1 minute)", Items: baton.ItemList(10, feeds...), Chains: []baton.Chain{{Job: "summary"}},
			Processor: baton.ProcessorFunc(func(_ context.Context, t baton.Task) ([]byte, error) { return t.Payload, nil })},
		baton.Job{Name: "summary", Assets: []string{"total"},
			Processor: baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
				sum, n := 0, 0
				for r, err := range t.ParentResults(ctx) {
					if err != nil {
						return nil, err
					}
					v, _ := strconv.Atoi(string(r.Result))
					sum, n = sum+v, n+1
				}
				return fmt.Appendf(nil, "%d feeds, %d", n, sum), nil
			})},
		baton.Job{Name: "reindex", Assets: []string{"placeholder"}, Queue: baton.JobQueue{Name: "maintenance"},
			Processor: baton.ProcessorFunc(func(_ context.Context, t baton.Task) ([]byte, error) { return []byte("reindexed " + t.Asset), nil })},
	)
	require.NoError(t, err)
	return cat
}

func runCatalog(t *testing.T, cat *baton.Catalog, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(t.Context(), cat, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// One local process runs the whole catalog: run --once with no --job
// ticks every scheduled job and runs the chains they start (the summary
// over the 25 run-time items, read through the engine); a job without a
// schedule is refused a tick by name; submit --wait on the embedded store
// processes its run with no worker running.
func TestRunOnceRunsTheWholeCatalog(t *testing.T) {
	t.Parallel()
	cat := newcomerCatalog(t)
	store := filepath.Join(t.TempDir(), "baton.db")
	code, out, errOut := runCatalog(t, cat, "run", "--once", "--store", store, "--json")
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	var rep struct {
		Run struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"run"`
		Chained []struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"chained"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, "complete", rep.Run.State, out)
	require.Len(t, rep.Chained, 1, out)
	require.Equal(t, "complete", rep.Chained[0].State)
	require.Contains(t, rep.Chained[0].ID, "summary+after-")

	code, out, errOut = runCatalog(t, cat, "run", "--once", "--job", "reindex", "--store", store)
	require.Equal(t, ExitUsage, code, out)
	require.Contains(t, errOut, "job reindex has no schedule: it has no tick to run")

	code, out, errOut = runCatalog(t, cat, "replay", "tick", "--job", "summary", "--at", "2026-11-21T12:00:00Z", "--store", store)
	require.Equal(t, ExitUsage, code, out)
	require.Contains(t, errOut, "job summary has no schedule: it has no ticks to replay")
	code, out, errOut = runCatalog(t, cat, "replay", "tick", "--job", "reindex", "--at", "2026-11-21T12:00:00Z", "--store", store)
	require.Equal(t, ExitUsage, code, out)
	require.Contains(t, errOut, "job reindex has no schedule")
	code, out, errOut = runCatalog(t, cat, "replay", "range", "--job", "reindex", "--from", "2026-11-21T12:00:00Z", "--to", "2026-11-21T13:00:00Z", "--store", store)
	require.Equal(t, ExitUsage, code, out)
	require.Contains(t, errOut, "job reindex has no schedule")

	// status of a job without a schedule says so, instead of an empty one.
	code, out, errOut = runCatalog(t, cat, "status", "--job", "summary", "--store", store)
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, out, "job summary, no schedule (on demand or by a chain), sqlite store")

	items := filepath.Join(t.TempDir(), "items.json")
	require.NoError(t, os.WriteFile(items, []byte(`[{"name":"tenant-1"},{"name":"tenant-2"}]`), 0o600))
	code, out, errOut = runCatalog(t, cat, "submit", "--job", "reindex", "--key", "nightly", "--items", items, "--wait", "1m", "--store", store)
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, out, "complete: 2 succeeded")
}

// With several scheduled jobs, run --once ticks each, one section each
// (one JSON object with a list).
func TestRunOnceTicksEveryScheduledJob(t *testing.T) {
	t.Parallel()
	job := func(name string) baton.Job {
		return baton.Job{Name: name, Schedule: "rate(1 minute)", Assets: []string{"a", "b"},
			Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return []byte("ok"), nil })}
	}
	cat, err := baton.NewCatalog(job("alpha"), job("beta"))
	require.NoError(t, err)
	store := filepath.Join(t.TempDir(), "baton.db")
	code, out, errOut := runCatalog(t, cat, "run", "--once", "--store", store, "--json")
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	var rep struct {
		Jobs []struct {
			Job string `json:"job"`
			Run struct {
				State string `json:"state"`
			} `json:"run"`
		} `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Len(t, rep.Jobs, 2, out)
	for i, name := range []string{"alpha", "beta"} {
		require.Equal(t, name, rep.Jobs[i].Job)
		require.Equal(t, "complete", rep.Jobs[i].Run.State)
	}
	code, out, _ = runCatalog(t, cat, "run", "--once", "--store", store)
	require.Equal(t, ExitOK, code, out)
	require.Contains(t, out, "job alpha, tick")
	require.Contains(t, out, "job beta, tick")
}

// run without --once serves the whole catalog in one process: work
// submitted from elsewhere (submit --consumers 0 processes nothing itself)
// to the on-demand job, on its own queue, is processed by the run
// process, and so is the scheduled job's run and the chained run its
// finish starts.
func TestRunServesTheWholeCatalog(t *testing.T) {
	t.Parallel()
	cat := newcomerCatalog(t)
	store := filepath.Join(t.TempDir(), "baton.db")
	ctx, stop := context.WithCancel(t.Context())
	var runOut, runErr bytes.Buffer
	runCode := make(chan int, 1)
	go func() {
		runCode <- Main(ctx, cat, []string{"run", "--store", store, "--consumers", "2"}, &runOut, &runErr)
	}()
	stopped := false
	stopRun := func() int {
		stop()
		stopped = true
		return <-runCode
	}
	t.Cleanup(func() {
		if !stopped {
			stopRun()
		}
	})

	items := filepath.Join(t.TempDir(), "items.json")
	require.NoError(t, os.WriteFile(items, []byte(`[{"name":"tenant-1"},{"name":"tenant-2"}]`), 0o600))
	code, out, errOut := runCatalog(t, cat, "submit", "--job", "reindex", "--key", "nightly", "--items", items,
		"--consumers", "0", "--wait", "1m", "--store", store)
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, out, "complete: 2 succeeded")

	feeds := filepath.Join(t.TempDir(), "feeds.json")
	require.NoError(t, os.WriteFile(feeds, []byte(`[{"name":"feed-a","payload":"4"},{"name":"feed-b","payload":"5"}]`), 0o600))
	code, out, errOut = runCatalog(t, cat, "submit", "--job", "feeds", "--key", "manual", "--items", feeds,
		"--consumers", "0", "--wait", "1m", "--store", store)
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, out, "complete: 2 succeeded")
	// The chained summary, started by the feeds run's finish, runs in the
	// run process too.
	var summary struct {
		Submissions []struct {
			Key   string `json:"key"`
			State string `json:"state"`
		} `json:"submissions"`
	}
	require.Eventually(t, func() bool {
		code, out, _ := runCatalog(t, cat, "status", "--job", "summary", "--store", store, "--json")
		if code != ExitOK || json.Unmarshal([]byte(out), &summary) != nil {
			return false
		}
		return len(summary.Submissions) == 1 && summary.Submissions[0].State == "complete"
	}, time.Minute, 100*time.Millisecond, "the chained summary run did not complete")
	require.Contains(t, summary.Submissions[0].Key, "after-")

	require.Equal(t, ExitOK, stopRun(), "run: stdout:\n%s\nstderr:\n%s", runOut.String(), runErr.String())
	require.Contains(t, runOut.String(), "running job feeds on ")
}

// template check accepts a job without a schedule (none in the template),
// lists it as such, and refuses a template that would tick it.
func TestTemplateCheckJobWithoutSchedule(t *testing.T) {
	t.Parallel()
	reindex := baton.Job{Name: "reindex", Assets: []string{"all"},
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })}
	cat, err := baton.NewCatalog(fx.Job(nil), reindex)
	require.NoError(t, err)
	tpl := filepath.Join("..", "..", "template.yaml")
	code, out, errOut := runCatalog(t, cat, "template", "check", "--template", tpl)
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Regexp(t, `(?m)^reindex\s+-\s+none: on demand or by a chain$`, out)
	code, out, _ = runCatalog(t, cat, "template", "check", "--template", tpl, "--json")
	require.Equal(t, ExitOK, code, out)
	var rep struct {
		Unscheduled []string `json:"unscheduled"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, []string{"reindex"}, rep.Unscheduled)

	unscheduled := fx.Job(nil)
	unscheduled.Schedule = ""
	cat, err = baton.NewCatalog(unscheduled)
	require.NoError(t, err)
	code, _, errOut = runCatalog(t, cat, "template", "check", "--template", tpl)
	require.Equal(t, ExitFailure, code, errOut)
	require.Contains(t, errOut, "job fx has no schedule (it runs on demand or by a chain), but the template's")
}
