package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batonclient"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/cli"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
)

// everyState is a store holding one run of fx with an item in every
// state, built on the real ledger: EURUSD SUCCEEDED, GBPUSD DEAD, USDJPY
// CANCELLED, USDCAD RUNNING, USDSEK RUNNING past its lease (stuck),
// XAUUSD FAILED waiting for its retry, USDCHF FAILED at attempt 0 (waiting
// on a limit before its first attempt: PENDING), and the derived DXY
// without a record (PENDING).
func everyState(t *testing.T) (path string, catalog *baton.Catalog, run ledger.RunID) {
	t.Helper()
	ctx := t.Context()
	path = filepath.Join(t.TempDir(), "baton.db")
	j := fx.Job(nil)
	j.RateLimits = []baton.RateLimit{{Name: "provider", InFlight: 2}}
	catalog = baton.MustCatalog(j)
	b, err := sqlitebackend.Open(ctx, path)
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	eng, err := exec.New(b, exec.Options{Catalog: catalog, Owner: "fixture"})
	require.NoError(t, err)
	tick := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	sum, err := eng.Trigger(ctx, fx.Name, tick, false)
	require.NoError(t, err)
	run = sum.Run
	now := time.Now()
	key := func(asset string) ledger.ItemKey { return ledger.ItemKey{Run: run, Asset: asset} }
	claim := func(asset, owner string) ledger.Item {
		it, err := b.Ledger.Claim(ctx, ledger.ClaimParams{Key: key(asset), Owner: owner, LeaseUntil: now.Add(time.Hour), Fence: sum.Fence, Now: now})
		require.NoError(t, err, asset)
		return it
	}
	it := claim("EURUSD", "w")
	_, err = b.Ledger.Complete(ctx, ledger.CompleteParams{Key: it.Key, Owner: "w", Attempt: it.Attempt, Result: []byte(`{"rate":1.08}`), Now: now})
	require.NoError(t, err)
	it = claim("GBPUSD", "w")
	_, err = b.Ledger.Fail(ctx, ledger.FailParams{Key: it.Key, Owner: "w", Attempt: it.Attempt, Reason: "bad quote", Permanent: true, Now: now})
	require.NoError(t, err)
	_, err = b.Ledger.Cancel(ctx, ledger.CancelParams{Key: key("USDJPY"), Reason: "by the operator", Now: now})
	require.NoError(t, err)
	claim("USDCAD", "worker-a")
	_, err = b.Ledger.Claim(ctx, ledger.ClaimParams{Key: key("USDSEK"), Owner: "dead-worker", LeaseUntil: now.Add(-time.Minute), Fence: sum.Fence, Now: now.Add(-2 * time.Minute)})
	require.NoError(t, err)
	it = claim("XAUUSD", "w")
	_, err = b.Ledger.Fail(ctx, ledger.FailParams{Key: it.Key, Owner: "w", Attempt: it.Attempt, Reason: "provider timeout", Now: now})
	require.NoError(t, err)
	noter := b.Ledger.(ledger.WaitNoter)
	_, err = noter.NoteWait(ctx, ledger.NoteWaitParams{Key: it.Key, Attempt: it.Attempt, Wait: ledger.ItemWait{At: now.Add(time.Hour)}, Now: now})
	require.NoError(t, err)
	un, err := noter.NoteWait(ctx, ledger.NoteWaitParams{Key: key("USDCHF"), Unclaimed: true, Wait: ledger.ItemWait{At: now.Add(time.Hour), Limit: "provider"}, Now: now})
	require.NoError(t, err)
	require.True(t, un.Unattempted(), "USDCHF is FAILED at attempt 0")
	return path, catalog, run
}

// wantEveryState is everyState's run's counts, as every view must give them.
var wantEveryState = map[string]int{"PENDING": 2, "RUNNING": 2, "FAILED": 1, "SUCCEEDED": 1, "DEAD": 1, "CANCELLED": 1}

// TestSameCountsEverywhere reads one run with an item in every state
// through the CLI (status --json, its overview and its text), the
// dashboard (the run's page and the job's) and batonclient.Status: all
// give the same counts.
func TestSameCountsEverywhere(t *testing.T) {
	t.Parallel()
	path, catalog, run := everyState(t)
	ctx := t.Context()

	cliRun := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		code := cli.Main(ctx, catalog, append(args, "--store", path), &out, &errOut)
		require.Equal(t, cli.ExitOK, code, "%s\n%s", out.String(), errOut.String())
		return out.String()
	}
	var detail struct {
		Run struct {
			Items    map[string]int `json:"items"`
			ItemList []struct {
				Asset, State string
			} `json:"item_list"`
		} `json:"run"`
	}
	require.NoError(t, json.Unmarshal([]byte(cliRun("status", "--json", "--run", run.String())), &detail))
	require.Equal(t, wantEveryState, detail.Run.Items, "status --json --run")
	require.Len(t, detail.Run.ItemList, len(fx.Assets)+1, "every item listed, the derived one included")

	var overview struct {
		Runs []struct {
			ID    string         `json:"id"`
			Items map[string]int `json:"items"`
		} `json:"runs"`
		Stuck []struct {
			Key string `json:"key"`
		} `json:"stuck"`
	}
	require.NoError(t, json.Unmarshal([]byte(cliRun("status", "--json")), &overview))
	require.Len(t, overview.Runs, 1)
	require.Equal(t, wantEveryState, overview.Runs[0].Items, "status --json")
	stuck := run.String() + "/USDSEK"
	require.Len(t, overview.Stuck, 1)
	require.Equal(t, stuck, overview.Stuck[0].Key, "status --json: the stuck item")

	text := cliRun("status", "--run", run.String())
	m := regexp.MustCompile(`(?m)^items: (.*)$`).FindStringSubmatch(text)
	require.NotNil(t, m, text)
	require.Equal(t, wantEveryState, pairs(t, m[1], `(\d+) ([A-Z]+)`), "status --run (text)")

	base := serveUI(t, catalog, "--store", path)
	c := &http.Client{Timeout: 30 * time.Second}
	code, body := get(t, c, runURL(base, run.String()))
	require.Equal(t, http.StatusOK, code, body)
	m = regexp.MustCompile(`(?s)<p class="counts">(.*?)</p>`).FindStringSubmatch(body)
	require.NotNil(t, m, body)
	require.Equal(t, wantEveryState, pairs(t, m[1], `>(\d+) ([A-Z]+)<`), "the run's page")
	require.Equal(t, 1, strings.Count(body, `class="pill stuck"`), "the run's page marks the stuck item")
	require.Regexp(t, `data-asset="USDSEK"[^\n]*\n<td>[^\n]*\n<td><span class="pill item-running">RUNNING</span> <span class="pill stuck"`, body)

	code, body = get(t, c, base+"/jobs/"+fx.Name)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, wantEveryState, runRowCounts(t, body, run), "the job's page")
	require.Contains(t, body, html.EscapeString(run.String()+"/XAUUSD"), "the waiting item is listed")
	m = regexp.MustCompile(`(?s)<table class="grid" id="stuck">(.*?)</table>`).FindStringSubmatch(body)
	require.NotNil(t, m, "the job's page lists the stuck items: %s", body)
	require.Equal(t, 1, strings.Count(m[1], "<tr data-item="), m[1])
	require.Contains(t, m[1], `data-item="`+html.EscapeString(stuck)+`"`)

	client, err := batonclient.Open(ctx, catalog, &batonclient.Options{Engine: "sqlite", Store: path})
	require.NoError(t, err)
	defer client.Close()
	st, err := client.Status(ctx, run)
	require.NoError(t, err)
	require.False(t, st.Finished)
	require.Equal(t, wantEveryState, map[string]int{"PENDING": st.Pending, "RUNNING": st.Running, "FAILED": st.Failed,
		"SUCCEEDED": st.Succeeded, "DEAD": st.Dead, "CANCELLED": st.Cancelled}, "batonclient.Status")

	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	st, err = client.Wait(wctx, run, 10*time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, 1, st.Succeeded, "Wait's status when it gives up counts as Status does")
}

// pairs reads "N STATE" pairs from s with re (two groups: N, STATE); every
// state absent is 0.
func pairs(t *testing.T, s, re string) map[string]int {
	t.Helper()
	out := map[string]int{"PENDING": 0, "RUNNING": 0, "FAILED": 0, "SUCCEEDED": 0, "DEAD": 0, "CANCELLED": 0}
	for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(s, -1) {
		n, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		_, known := out[m[2]]
		require.True(t, known, "unknown state %s in %q", m[2], s)
		out[m[2]] = n
	}
	return out
}

// runRowCounts reads run's row of the runs table of a job's page: the
// header's state columns and the row's cells under them.
func runRowCounts(t *testing.T, body string, run ledger.RunID) map[string]int {
	t.Helper()
	head := regexp.MustCompile(`<thead><tr><th>Run</th><th>State</th>(.*?)<th>Tick to done</th></tr></thead>`).FindStringSubmatch(body)
	require.NotNil(t, head, body)
	var states []string
	for _, m := range regexp.MustCompile(`<th>([A-Z]+)</th>`).FindAllStringSubmatch(head[1], -1) {
		states = append(states, m[1])
	}
	i := strings.Index(body, `data-run="`+html.EscapeString(run.String())+`"`)
	require.GreaterOrEqual(t, i, 0, "the run's row: %s", body)
	row := body[i:]
	row = row[:strings.Index(row, "</tr>")]
	cells := regexp.MustCompile(`<td class="num[^"]*">(\d+)</td>`).FindAllStringSubmatch(row, -1)
	require.Len(t, cells, len(states), row)
	out := map[string]int{}
	for k, st := range states {
		n, err := strconv.Atoi(cells[k][1])
		require.NoError(t, err)
		out[st] = n
	}
	return out
}
