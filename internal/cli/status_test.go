package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/runstatus"
)

// arrangeStatus builds a store with three complete runs, one run in
// flight with a cancelled item, a stuck item and pending ones, a live
// lease that refused one acquisition, and one dead letter.
func arrangeStatus(t *testing.T, f *opsFixture) (stuckKey ledger.ItemKey) {
	t.Helper()
	ctx := t.Context()
	code, out, errOut := f.main("replay", "range", "--from", rfc(f.tick(0)), "--to", rfc(f.tick(3)), "--rate", "1000")
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	code, out, errOut = f.main("replay", "tick", "--at", rfc(f.tick(3)), "--wait=false")
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	code, out, errOut = f.main("cancel", "--run", f.run(3, 1).String(), "--asset", "EURUSD")
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)

	now := time.Now()
	stuckKey = ledger.ItemKey{Run: f.run(3, 1), Asset: "GBPUSD"}
	_, err := f.b.Ledger.Claim(ctx, ledger.ClaimParams{Key: stuckKey, Owner: "dead-worker", LeaseUntil: now.Add(-time.Minute), Fence: 1, Now: now.Add(-2 * time.Minute)})
	require.NoError(t, err)

	_, err = f.b.Leases.Acquire(ctx, lease.AcquireParams{Job: fx.Name, Owner: "coordinator-x", TTL: 10 * time.Minute, Now: now})
	require.NoError(t, err)
	sum, err := f.eng.Trigger(ctx, fx.Name, f.tick(4), false)
	require.NoError(t, err)
	require.Equal(t, "skipped", string(sum.Outcome))

	dead := message.New(ledger.ItemKey{Run: f.run(0, 1), Asset: "USDJPY"}, 1, false).QueueMessage()
	_, err = queue.SendAll(ctx, f.b.DeadLetter, []queue.Message{dead}, nil)
	require.NoError(t, err)

	// The replays' last receives may still hold a message of tick 3 (on
	// SQS a receive runs out its wait; its batch is handled and deleted
	// soon after): the status is compared with a queue at rest.
	require.Eventually(t, func() bool {
		d, err := queue.OpsOf(f.b.Work).Depth(ctx)
		return err == nil && d.InFlight == 0
	}, 30*time.Second, 100*time.Millisecond, "the work queue comes to rest")
	return stuckKey
}

func TestStatusJSONMatchesLedger(t *testing.T) {
	t.Parallel()
	testStatusJSONMatchesLedger(t, newSQLiteFixture(t))
}

func testStatusJSONMatchesLedger(t *testing.T, f *opsFixture) {
	stuckKey := arrangeStatus(t, f)
	ctx := t.Context()

	code, out, errOut := f.main("status", "--json", "--runs", "3")
	require.Equal(t, ExitOK, code, errOut)
	var rep statusReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &raw))
	for _, k := range []string{"job", "lease", "runs", "assets", "stuck", "queues", "now"} {
		require.Contains(t, raw, k)
	}

	// Runs: the three newest, each as the ledger has it.
	runs, err := f.b.Ledger.ListRuns(ctx, ledger.ListRunsParams{Job: fx.Name, Limit: 100})
	require.NoError(t, err)
	require.Len(t, runs, 4)
	require.Len(t, rep.Runs, 3)
	expected := exec.SortedItemNames(fx.Job(nil))
	for i, got := range rep.Runs {
		want := runs[i]
		require.Equal(t, want.ID.String(), got.ID)
		require.Equal(t, string(want.State), got.State)
		require.Equal(t, want.Cursor, got.Cursor)
		require.Equal(t, want.Total, got.Total)
		require.Equal(t, want.Fence, got.Fence)
		require.True(t, want.OpenedAt.Equal(got.OpenedAt))
		items, err := f.b.Ledger.ListItems(ctx, want.ID)
		require.NoError(t, err)
		counts := map[string]int{pending: len(expected) - len(items)}
		for _, it := range items {
			counts[string(it.State)]++
		}
		for state, n := range got.Items {
			require.Equal(t, counts[state], n, "run %s, %s", want.ID, state)
		}
		sum := 0
		for _, n := range got.Items {
			sum += n
		}
		require.Equal(t, len(expected), sum, "run %s: every expected item counted once", want.ID)
	}
	require.Equal(t, f.run(3, 1).String(), rep.Runs[0].ID)
	require.Equal(t, 1, rep.Runs[0].Items["RUNNING"])
	require.Equal(t, 2, rep.Runs[0].Items["CANCELLED"], "EURUSD and, by fan-in, DXY")

	// Lease and contention.
	l, err := f.b.Leases.Inspect(ctx, fx.Name)
	require.NoError(t, err)
	require.NotNil(t, rep.Lease)
	require.Equal(t, l.Owner, rep.Lease.Owner)
	require.Equal(t, l.Fence, rep.Lease.Fence)
	require.Equal(t, "held", rep.Lease.State)
	require.True(t, l.ExpiresAt.Equal(*rep.Lease.ExpiresAt))
	require.NotNil(t, rep.Lease.Contention)
	require.EqualValues(t, 1, rep.Lease.Contention.Count)
	require.Equal(t, "coordinator-x", rep.Lease.Contention.LastHolder)

	// Assets: the latest success is tick 2 (tick 3 has none), staleness
	// measured from that tick to the report's now.
	require.Len(t, rep.Assets, len(expected))
	for _, a := range rep.Assets {
		require.NotNil(t, a.LastSuccess, a.Asset)
		require.True(t, a.LastSuccess.Equal(f.tick(2)), "%s: %s", a.Asset, a.LastSuccess)
		require.Equal(t, f.run(2, 1).String(), a.Run)
		require.InDelta(t, rep.Now.Sub(f.tick(2)).Seconds(), *a.StalenessSeconds, 1e-6)
		it, err := f.b.Ledger.GetItem(ctx, ledger.ItemKey{Run: f.run(2, 1), Asset: a.Asset})
		require.NoError(t, err)
		require.True(t, it.FinishedAt.Equal(*a.FinishedAt))
	}

	// Stuck: exactly the item whose lease ended.
	require.Len(t, rep.Stuck, 1)
	require.Equal(t, stuckKey.String(), rep.Stuck[0].Key)
	require.Equal(t, "dead-worker", rep.Stuck[0].Owner)
	require.Greater(t, rep.Stuck[0].OverdueSeconds, 59.0)

	// Queues, as the queues count themselves.
	work, err := queue.OpsOf(f.b.Work).Depth(ctx)
	require.NoError(t, err)
	dlq, err := queue.OpsOf(f.b.DeadLetter).Depth(ctx)
	require.NoError(t, err)
	require.Len(t, rep.Queues, 2)
	require.Equal(t, "work", rep.Queues[0].Role)
	require.Equal(t, "dead_letter", rep.Queues[1].Role)
	for i, d := range []queue.Depth{work, dlq} {
		got := rep.Queues[i]
		require.Equal(t, d.Total(), got.Visible+got.InFlight+got.Delayed, got.Role)
		require.Equal(t, d.Approximate, got.Approximate, got.Role)
		require.Empty(t, got.Error, got.Role)
	}
	require.GreaterOrEqual(t, work.Total(), 7, "tick 3's messages, never consumed (SQS may hold duplicates left in flight too)")
	require.Equal(t, 1, dlq.Total())

	// The same in tables.
	code, out, errOut = f.main("status")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "lease: held by coordinator-x, fence "+strconv.FormatInt(l.Fence, 10))
	require.Contains(t, out, "contention: 1 acquisitions refused")
	require.Contains(t, out, stuckKey.String()+"  dead-worker")
	require.Regexp(t, `dead-letter queue: \d+ visible, \d+ in flight, \d+ delayed`, out)
	require.Regexp(t, `(?m)^`+f.run(2, 1).String()+`\s+complete\s+0\s+0\s+0\s+8\s+0\s+0\s`, out)
}

func TestStatusRunMatchesLedger(t *testing.T) {
	t.Parallel()
	f := newSQLiteFixture(t)
	stuckKey := arrangeStatus(t, f)
	id := f.run(3, 1)

	code, out, errOut := f.main("status", "--json", "--run", id.String())
	require.Equal(t, ExitOK, code, errOut)
	var rep statusReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.NotNil(t, rep.Run)
	require.Nil(t, rep.Runs)
	require.True(t, rep.Run.Current)
	items := f.items(id)
	expected := exec.SortedItemNames(fx.Job(nil))
	require.Len(t, rep.Run.ItemList, len(expected))
	for i, got := range rep.Run.ItemList {
		require.Equal(t, expected[i], got.Asset)
		want, ok := items[got.Asset]
		if !ok {
			require.Equal(t, pending, got.State, got.Asset)
			continue
		}
		require.Equal(t, string(want.State), got.State, got.Asset)
		require.Equal(t, want.Attempt, got.Attempt, got.Asset)
		require.Equal(t, want.Owner, got.Owner, got.Asset)
		require.Equal(t, want.Error, got.Error, got.Asset)
	}
	require.Equal(t, "CANCELLED", rep.Run.ItemList[1].State) // EURUSD (DXY sorts first)
	for _, s := range rep.Run.ItemList {
		if s.Key == stuckKey.String() {
			require.Greater(t, s.OverdueSeconds, 0.0)
		}
	}

	// Errors: a run that does not exist, a malformed id, a job mismatch.
	code, _, errOut = f.main("status", "--run", f.run(9, 1).String())
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "has no run")
	code, _, errOut = f.main("status", "--run", "fx@yesterday#1")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "invalid run id")
	code, _, errOut = f.main("status", "--run", "nope@2026-01-01T00:00:00Z#1")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, `unknown job "nope"`)
	code, _, errOut = f.main("status", "--run", f.run(3, 2).String())
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "latest generation is "+id.String())
}

func TestStatusEmptyStore(t *testing.T) {
	t.Parallel()
	f := newSQLiteFixture(t)
	code, out, errOut := f.main("status", "--json")
	require.Equal(t, ExitOK, code, errOut)
	var rep statusReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Nil(t, rep.Lease)
	require.Empty(t, rep.Runs)
	for _, a := range rep.Assets {
		require.Nil(t, a.LastSuccess)
	}
	code, out, _ = f.main("status")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "lease: never taken")
	require.Contains(t, out, "runs: none yet")
}

func TestStatusFindsStuckItemsPastRuns(t *testing.T) {
	t.Parallel()
	testStatusFindsStuckItemsPastRuns(t, newSQLiteFixture(t))
}

// testStatusFindsStuckItemsPastRuns: a stuck item in a run older than
// --runs, behind newer complete runs that give every asset its latest
// success, is still reported; finished runs past --runs are not read.
func testStatusFindsStuckItemsPastRuns(t *testing.T, f *opsFixture) {
	ctx := t.Context()
	code, out, errOut := f.main("replay", "range", "--from", rfc(f.tick(1)), "--to", rfc(f.tick(4)), "--rate", "1000")
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	code, out, errOut = f.main("replay", "tick", "--at", rfc(f.tick(0)), "--wait=false")
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	now := time.Now()
	stuckKey := ledger.ItemKey{Run: f.run(0, 1), Asset: "GBPUSD"}
	_, err := f.b.Ledger.Claim(ctx, ledger.ClaimParams{Key: stuckKey, Owner: "dead-worker", LeaseUntil: now.Add(-time.Minute), Fence: 1, Now: now.Add(-2 * time.Minute)})
	require.NoError(t, err)

	code, out, errOut = f.main("status", "--json", "--runs", "1")
	require.Equal(t, ExitOK, code, errOut)
	var rep statusReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Len(t, rep.Runs, 1)
	require.Equal(t, f.run(3, 1).String(), rep.Runs[0].ID)
	require.Len(t, rep.Stuck, 1, out)
	require.Equal(t, stuckKey.String(), rep.Stuck[0].Key)
	require.Equal(t, "dead-worker", rep.Stuck[0].Owner)

	code, out, errOut = f.main("status", "--runs", "1")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, stuckKey.String()+"  dead-worker")

	// --history bounds the scan: with two runs scanned, tick 0 is out.
	code, out, errOut = f.main("status", "--json", "--runs", "1", "--history", "2")
	require.Equal(t, ExitOK, code, errOut)
	rep = statusReport{}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Empty(t, rep.Stuck)

	// Past --runs, with every asset's latest success known, only the
	// unfinished run is read.
	b := f.b
	counting := &listCounter{Store: b.Ledger, runs: map[string]int{}}
	b.Ledger = counting
	j, _ := fx.Catalog(nil).Lookup(fx.Name)
	rep, err = runstatus.Read(ctx, b, j, runstatus.Params{Runs: 1, History: 100, Now: time.Now().UTC()})
	require.NoError(t, err)
	require.Len(t, rep.Stuck, 1)
	require.Equal(t, map[string]int{f.run(3, 1).String(): 1, f.run(0, 1).String(): 1}, counting.runs)
}

// listCounter counts ListItems calls per run.
type listCounter struct {
	ledger.Store
	runs map[string]int
}

func (c *listCounter) ListItems(ctx context.Context, run ledger.RunID) ([]ledger.Item, error) {
	c.runs[run.String()]++
	return c.Store.ListItems(ctx, run)
}

// Reading commands open the embedded store read-only: a mistyped path is
// bad input and creates nothing; a damaged store is refused.
func TestReadingCommandsCreateNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "typo", "baton.db")
	for _, args := range [][]string{
		{"status", "--store", missing},
		{"lease", "show", "--store", missing},
		{"dlq", "list", "--store", missing},
	} {
		code, _, errOut := runMain(t, args...)
		require.Equal(t, ExitUsage, code, "%v: %s", args, errOut)
		require.Contains(t, errOut, "no store there", "%v", args)
	}
	_, err := os.Stat(filepath.Join(dir, "typo"))
	require.True(t, os.IsNotExist(err), "nothing created")

	garbage := filepath.Join(dir, "garbage.db")
	require.NoError(t, os.WriteFile(garbage, bytes.Repeat([]byte("not a database "), 4096), 0o644))
	for _, args := range [][]string{{"status", "--store", garbage}, {"run", "--once", "--store", garbage}} {
		code, _, errOut := runMain(t, args...)
		require.Equal(t, ExitFailure, code, "%v", args)
		require.Contains(t, errOut, "corrupt store", "%v", args)
	}
}

// status names the ticks without a run among the runs it lists, and why.
func TestTickGaps(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	run := func(m int) ledger.Run {
		return ledger.Run{ID: ledger.RunID{Job: "fx", Nominal: t0.Add(time.Duration(m) * time.Minute), Generation: 1}}
	}
	runs := []ledger.Run{run(3), run(0)} // newest first
	now := t0.Add(5*time.Minute + 10*time.Second)
	j := fx.Job(nil)
	reasons := func(gaps []tickGap) map[int]string {
		out := map[int]string{}
		for _, g := range gaps {
			out[int(g.Tick.Sub(t0)/time.Minute)] = g.Reason
		}
		return out
	}
	require.Equal(t, map[int]string{1: "missed", 2: "missed", 4: "missed", 5: "missed"}, reasons(runstatus.TickGaps(j, runs, nil, now)))
	j.CatchUp = baton.CatchUp{Window: 2 * time.Minute, Skip: true}
	require.Equal(t, map[int]string{1: "missed", 2: "missed", 4: "skipped (catch-up policy)", 5: "skipped (catch-up policy)"}, reasons(runstatus.TickGaps(j, runs, nil, now)))
	j.CatchUp.Skip = false
	require.Equal(t, "catch-up pending", reasons(runstatus.TickGaps(j, runs, nil, now))[4])

	var out bytes.Buffer
	printGaps(&out, runstatus.TickGaps(j, runs, nil, now))
	require.Contains(t, out.String(), "missed: 2 (2026-11-21T12:02:00Z, 2026-11-21T12:01:00Z)")
}

// A forced replay supersedes the tick's generation 1: its messages still
// in the queue are acknowledged as superseded, and status counts them
// beside generation 2 (invariant 10).
func TestStatusCountsSuperseded(t *testing.T) {
	t.Parallel()
	testStatusCountsSuperseded(t, newSQLiteFixture(t))
}

func testStatusCountsSuperseded(t *testing.T, f *opsFixture) {
	code, out, errOut := f.main("replay", "tick", "--at", rfc(f.tick(0)), "--wait=false")
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	code, out, errOut = f.main("replay", "tick", "--at", rfc(f.tick(0)), "--force", "--wait=false")
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)

	gen1 := f.run(0, 1)
	f.consumeOutcomes(func(seen []consumer.MessageOutcome) bool {
		for _, a := range fx.Assets {
			if !handled(seen, ledger.ItemKey{Run: gen1, Asset: a}, consumer.StatusSuperseded) {
				return false
			}
		}
		return true
	})

	code, out, errOut = f.main("status", "--json", "--runs", "1")
	require.Equal(t, ExitOK, code, errOut)
	var rep statusReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Len(t, rep.Runs, 1)
	require.Equal(t, f.run(0, 2).String(), rep.Runs[0].ID)
	require.Equal(t, len(fx.Assets), rep.Runs[0].Superseded, out)

	code, out, errOut = f.main("status", "--run", f.run(0, 2).String())
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "superseded: "+strconv.Itoa(len(fx.Assets))+" items of earlier generations")
	code, out, errOut = f.main("status")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "SUPERSEDED")
}

// resultsCatalog's items return a short text, a text longer than the
// bound, a binary result, a text of several lines and one quoting a
// password.
func resultsCatalog(t *testing.T) *baton.Catalog {
	t.Helper()
	results := map[string][]byte{
		"short":  []byte(`{"rows":42}`),
		"long":   []byte(strings.Repeat("0123456789", 300)),
		"bin":    {0x7b, 0x00, 0xff, 0x7d},
		"lines":  []byte("line one\nline two"),
		"secret": []byte("loaded from postgres://app:hunter22@db/x"),
	}
	cat, err := baton.NewCatalog(baton.Job{Name: "results", Schedule: "rate(1 minute)", Assets: []string{"bin", "lines", "long", "secret", "short"},
		Processor: baton.ProcessorFunc(func(_ context.Context, t baton.Task) ([]byte, error) { return results[t.Asset], nil })})
	require.NoError(t, err)
	return cat
}

// status --run shows each SUCCEEDED item's result, bounded as dead-letter
// reasons are: the first line in the table, up to 1 KiB with --json
// (marked when cut), the size of a binary one, secrets masked.
func TestStatusRunShowsResults(t *testing.T) {
	t.Parallel()
	cat := resultsCatalog(t)
	store := filepath.Join(t.TempDir(), "baton.db")
	code, out, errOut := runCatalog(t, cat, "run", "--once", "--store", store, "--json")
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	var once struct {
		Run struct {
			ID string `json:"id"`
		} `json:"run"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &once), out)

	code, out, errOut = runCatalog(t, cat, "status", "--store", store, "--run", once.Run.ID, "--json")
	require.Equal(t, ExitOK, code, errOut)
	var rep statusReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	byAsset := map[string]itemStatus{}
	for _, it := range rep.Run.ItemList {
		require.Equal(t, "SUCCEEDED", it.State, it.Asset)
		byAsset[it.Asset] = it
	}
	require.Equal(t, `{"rows":42}`, byAsset["short"].Result)
	require.Equal(t, 11, byAsset["short"].ResultBytes)
	require.False(t, byAsset["short"].ResultTruncated)
	require.Equal(t, strings.Repeat("0123456789", 300)[:ledger.ResultPreviewBytes], byAsset["long"].Result)
	require.True(t, byAsset["long"].ResultTruncated)
	require.Equal(t, 3000, byAsset["long"].ResultBytes)
	require.Empty(t, byAsset["bin"].Result)
	require.True(t, byAsset["bin"].ResultBinary)
	require.Equal(t, 4, byAsset["bin"].ResultBytes)
	require.Equal(t, "line one\nline two", byAsset["lines"].Result)
	require.NotContains(t, byAsset["secret"].Result, "hunter22")
	require.Contains(t, byAsset["secret"].Result, "loaded from postgres://app:")

	code, out, errOut = runCatalog(t, cat, "status", "--store", store, "--run", once.Run.ID)
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "RESULT")
	require.Regexp(t, `(?m)^short\s+SUCCEEDED\s.*\s\{"rows":42\}\s*$`, out)
	require.Regexp(t, `(?m)^long\s+SUCCEEDED\s.*\s012345678901234567890123456789012345678…\s*$`, out, "cut to the table's width")
	require.Regexp(t, `(?m)^bin\s+SUCCEEDED\s.*\s\(4 bytes\)\s*$`, out)
	require.Regexp(t, `(?m)^lines\s+SUCCEEDED\s.*\sline one…\s*$`, out)
	require.NotContains(t, out, "hunter22")
}
