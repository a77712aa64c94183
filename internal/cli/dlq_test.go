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

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// TestRedriveDeadLetterOfSucceededItem: a message dead-lettered for an
// item that later succeeded is redriven and acknowledged without running
// the item again; a dead letter for an item still FAILED runs it; a
// malformed message comes back to the dead-letter queue.
func TestRedriveDeadLetterOfSucceededItem(t *testing.T) {
	t.Parallel()
	f := newSQLiteFixture(t)
	testRedrive(t, f)
}

func testRedrive(t *testing.T, f *opsFixture) {
	ctx := t.Context()
	// Tick 0 completes.
	code, out, errOut := f.main("replay", "tick", "--at", rfc(f.tick(0)))
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	done := ledger.ItemKey{Run: f.run(0, 1), Asset: "EURUSD"}
	before, err := f.b.Ledger.GetItem(ctx, done)
	require.NoError(t, err)

	// Tick 1: USDJPY failed once and its message was dead-lettered.
	_, _, err = f.b.Ledger.OpenRun(ctx, ledger.OpenRunParams{Job: "fx", Nominal: f.tick(1), Fence: 1, Now: time.Now()})
	require.NoError(t, err)
	failed := ledger.ItemKey{Run: f.run(1, 1), Asset: "USDJPY"}
	claimed, err := f.b.Ledger.Claim(ctx, ledger.ClaimParams{Key: failed, Owner: "w", LeaseUntil: time.Now().Add(time.Minute), Fence: 1, Now: time.Now()})
	require.NoError(t, err)
	_, err = f.b.Ledger.Fail(ctx, ledger.FailParams{Key: failed, Owner: "w", Attempt: claimed.Attempt, Reason: "provider timeout", Now: time.Now()})
	require.NoError(t, err)

	dead := func(key ledger.ItemKey, reason string) queue.Message {
		m := message.New(key, 1, false).QueueMessage()
		m.Attributes[message.AttrError] = reason
		return m
	}
	_, err = queue.SendAll(ctx, f.b.DeadLetter, []queue.Message{
		dead(done, "claim: item held by a live owner"),
		dead(failed, "provider timeout"),
		{Body: []byte(`{"not":"baton"}`), Attributes: map[string]string{message.AttrError: "malformed message"}},
	}, nil)
	require.NoError(t, err)

	code, out, errOut = f.main("dlq", "list", "--json")
	require.Equal(t, ExitOK, code, errOut)
	var listed struct {
		Messages []deadLetter `json:"messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &listed), out)
	require.Len(t, listed.Messages, 3)
	byKey := map[string]deadLetter{}
	for _, m := range listed.Messages {
		byKey[m.Key] = m
	}
	require.Equal(t, "SUCCEEDED", byKey[done.String()].ItemState)
	require.Equal(t, "acknowledged, not re-run", byKey[done.String()].OnRedrive)
	require.Equal(t, "FAILED", byKey[failed.String()].ItemState)
	require.Equal(t, "runs", byKey[failed.String()].OnRedrive)
	require.Equal(t, "provider timeout", byKey[failed.String()].LastError)
	require.Equal(t, 1, byKey[failed.String()].Attempts)
	require.Contains(t, byKey[""].Malformed, "malformed message")
	for _, m := range listed.Messages {
		require.GreaterOrEqual(t, m.AgeSeconds, 0.0)
	}

	code, out, errOut = f.main("dlq", "list")
	require.Equal(t, ExitOK, code, errOut)
	require.Regexp(t, done.String()+`\s+SUCCEEDED\s+1\s+\d+\s+\S+\s+acknowledged, not re-run`, out)
	require.Contains(t, out, "(malformed)")

	code, out, errOut = f.main("dlq", "redrive")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "moved 3 message(s)")

	calls := f.calls.total()
	f.consumeOutcomes(func(seen []consumer.MessageOutcome) bool {
		return handled(seen, done, consumer.StatusDuplicate) && handled(seen, failed, consumer.StatusSucceeded)
	})
	require.Equal(t, 0, f.calls.get(done), "the succeeded item was not run again")
	require.Equal(t, 1, f.calls.get(failed), "the failed item ran")
	require.Equal(t, calls+1, f.calls.total())
	after, err := f.b.Ledger.GetItem(ctx, done)
	require.NoError(t, err)
	require.Equal(t, before, after)
	it, err := f.b.Ledger.GetItem(ctx, failed)
	require.NoError(t, err)
	require.Equal(t, 2, it.Attempt)

	// Only the malformed message is back.
	require.Eventually(t, func() bool {
		ms, err := queue.OpsOf(f.b.DeadLetter).Peek(ctx, 0)
		return err == nil && len(ms) == 1 && string(ms[0].Body) == `{"not":"baton"}`
	}, 10*time.Second, 20*time.Millisecond)
}

func TestRedriveMax(t *testing.T) {
	t.Parallel()
	testRedriveMax(t, newSQLiteFixture(t))
}

// testRedriveMax: a bounded redrive moves that many messages (on SQS with
// the portable receive, send and delete, not a move task).
func testRedriveMax(t *testing.T, f *opsFixture) {
	ctx := t.Context()
	var msgs []queue.Message
	for i := range 5 {
		msgs = append(msgs, message.New(ledger.ItemKey{Run: f.run(i, 1), Asset: "EURUSD"}, 1, false).QueueMessage())
	}
	_, err := queue.SendAll(ctx, f.b.DeadLetter, msgs, nil)
	require.NoError(t, err)
	code, out, errOut := f.main("dlq", "redrive", "--max", "2")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "moved 2 message(s)")
	require.Contains(t, out, "3 message(s) left in the dead-letter queue")
	work, err := queue.OpsOf(f.b.Work).Peek(ctx, 0)
	require.NoError(t, err)
	require.Len(t, work, 2)
	if f.b.Name == "sqlite" {
		require.Equal(t, msgs[0].Body, work[0].Body, "oldest first, body kept")
	}
	bodies := map[string]bool{}
	for _, m := range msgs {
		bodies[string(m.Body)] = true
	}
	for _, m := range work {
		require.True(t, bodies[string(m.Body)], "body kept: %s", m.Body)
	}

	code, _, errOut = f.main("dlq", "redrive", "--max", "-1")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "--max must not be negative")
	code, out, _ = f.main("dlq", "list", "--max", "1")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "1 message(s)")
}

func TestCancel(t *testing.T) {
	t.Parallel()
	testCancel(t, newSQLiteFixture(t))
}

func testCancel(t *testing.T, f *opsFixture) {
	ctx := t.Context()
	// Tick 0 fanned out, nothing consumed yet; USDJPY is RUNNING.
	code, out, errOut := f.main("replay", "tick", "--at", rfc(f.tick(0)), "--wait=false")
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	id := f.run(0, 1)
	running := ledger.ItemKey{Run: id, Asset: "USDJPY"}
	claimed, err := f.b.Ledger.Claim(ctx, ledger.ClaimParams{Key: running, Owner: "w", LeaseUntil: time.Now().Add(time.Hour), Fence: 1, Now: time.Now()})
	require.NoError(t, err)

	code, out, errOut = f.main("cancel", "--run", id.String(), "--reason", "bad provider data")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "USDJPY  RUNNING (w, attempt 1)  CANCELLED")
	require.Contains(t, out, "8 cancelled, 0 already terminal; run "+id.String()+" is partial")
	for name, it := range f.items(id) {
		require.Equal(t, ledger.ItemCancelled, it.State, name)
		require.Equal(t, "bad provider data", it.Error, name)
	}

	// The worker's late completion is refused; redeliveries run nothing.
	_, err = f.b.Ledger.Complete(ctx, ledger.CompleteParams{Key: running, Owner: "w", Attempt: claimed.Attempt, Result: []byte(`{}`), Now: time.Now()})
	require.ErrorIs(t, err, ledger.ErrTerminal)
	f.consumeOutcomes(func(seen []consumer.MessageOutcome) bool {
		for _, name := range fx.Assets {
			if !handled(seen, ledger.ItemKey{Run: id, Asset: name}, consumer.StatusDuplicate) {
				return false
			}
		}
		return true
	})
	require.Equal(t, 0, f.calls.total())
	for name, it := range f.items(id) {
		require.Equal(t, ledger.ItemCancelled, it.State, name)
	}

	// A terminal item: refused, unchanged.
	code, out, errOut = f.main("replay", "tick", "--at", rfc(f.tick(1)))
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	code, _, errOut = f.main("cancel", "--run", f.run(1, 1).String(), "--asset", "EURUSD")
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, "refused: "+f.run(1, 1).String()+"/EURUSD is already SUCCEEDED")
	// Cancelling again what is cancelled is fine.
	code, _, errOut = f.main("cancel", "--run", id.String(), "--asset", "EURUSD")
	require.Equal(t, ExitOK, code, errOut)

	// Bad input.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cancel", "--run", f.run(7, 1).String()}, "has no run"},
		{[]string{"cancel", "--run", id.String(), "--asset", "DOGE"}, `unknown asset "DOGE"`},
		{[]string{"cancel"}, "--run is required"},
	} {
		code, _, errOut := f.main(tc.args...)
		require.Equal(t, ExitUsage, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}

// dlq list checks each message as the consumer will: its job and asset
// against the catalog, its run and generation against the ledger.
func TestDLQListPredictsWhatTheConsumerDoes(t *testing.T) {
	t.Parallel()
	testDLQListPredicts(t, newSQLiteFixture(t))
}

func testDLQListPredicts(t *testing.T, f *opsFixture) {
	ctx := t.Context()
	code, out, errOut := f.main("replay", "tick", "--at", rfc(f.tick(0)))
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	code, out, errOut = f.main("replay", "tick", "--at", rfc(f.tick(1)))
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	code, out, errOut = f.main("replay", "tick", "--at", rfc(f.tick(1)), "--force")
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)

	future := baton.RunID{Job: "fx", Nominal: time.Now().UTC().Truncate(time.Minute).Add(time.Hour), Generation: 1}
	want := map[string]string{
		"bonds@" + rfc(f.tick(0)) + "#1/EURUSD":                    "rejected again (unknown job)",
		ledger.ItemKey{Run: f.run(0, 1), Asset: "BTCUSD"}.String(): "rejected again (unknown asset)",
		ledger.ItemKey{Run: f.run(2, 1), Asset: "EURUSD"}.String(): "rejected again (the tick has no run)",
		ledger.ItemKey{Run: f.run(0, 9), Asset: "EURUSD"}.String(): "rejected again (generation never opened)",
		ledger.ItemKey{Run: f.run(1, 1), Asset: "EURUSD"}.String(): "acknowledged (superseded by " + f.run(1, 2).String() + ")",
		ledger.ItemKey{Run: future, Asset: "EURUSD"}.String():      "rejected again (future tick)",
		ledger.ItemKey{Run: f.run(0, 1), Asset: "EURUSD"}.String(): "acknowledged, not re-run",
	}
	var msgs []queue.Message
	for key := range want {
		msgs = append(msgs, queue.Message{Body: fmt.Appendf(nil, `{"v":1,"key":%q,"fence":1}`, key)})
	}
	// A shard message: its redrive expands its range again.
	shard := ledger.ItemKey{Run: f.run(0, 1), Asset: "GBPUSD"}.String()
	want[shard] = "expands items 1 to 2 again"
	msgs = append(msgs, queue.Message{Body: fmt.Appendf(nil, `{"v":3,"key":%q,"fence":1,"expand":{"from":1,"to":3}}`, shard)})
	// An item message with a page (version 2) for a job of constant items:
	// the consumer refuses it.
	paged := ledger.ItemKey{Run: f.run(0, 1), Asset: "PAGED"}.String()
	want[paged] = "rejected again (malformed: version 2 does not fit the job's items)"
	msgs = append(msgs, queue.Message{Body: fmt.Appendf(nil, `{"v":2,"key":%q,"fence":1,"page":0}`, paged)})
	// Page shards (version 4) of a submission's stored page: expanded
	// again when the page is stored and starts with the message's item.
	itemsFile := filepath.Join(t.TempDir(), "items.json")
	require.NoError(t, os.WriteFile(itemsFile, []byte(`[{"name":"GBPUSD"},{"name":"EURUSD"}]`), 0o600))
	code, out, errOut = f.main("submit", "--key", "dl", "--items", itemsFile)
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	sub := baton.RunID{Job: "fx", Submission: "dl", Generation: 1}
	for asset, tc := range map[string]struct {
		page int
		want string
	}{
		"EURUSD": {0, "expands the 2 items of page 0 again"},
		"GBPUSD": {0, "rejected again (malformed: GBPUSD is not the first item of page 0)"},
		"USDJPY": {3, "rejected again (page 3 of the run's list is not stored)"},
	} {
		k := ledger.ItemKey{Run: sub, Asset: asset}.String()
		want[k] = tc.want
		msgs = append(msgs, queue.Message{Body: fmt.Appendf(nil, `{"v":4,"key":%q,"fence":1,"page":%d}`, k, tc.page)})
	}
	// A page shard (version 4) for a job of constant items: refused too.
	pageShard := ledger.ItemKey{Run: f.run(0, 1), Asset: "PAGESHARD"}.String()
	want[pageShard] = "rejected again (malformed: a page shard for a job of constant items)"
	msgs = append(msgs, queue.Message{Body: fmt.Appendf(nil, `{"v":4,"key":%q,"fence":1,"page":0}`, pageShard)})
	_, err := queue.SendAll(ctx, f.b.DeadLetter, msgs, nil)
	require.NoError(t, err)

	code, out, errOut = f.main("dlq", "list", "--json")
	require.Equal(t, ExitOK, code, errOut)
	var listed struct {
		Messages []deadLetter `json:"messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &listed), out)
	got := map[string]string{}
	for _, m := range listed.Messages {
		got[m.Key] = m.OnRedrive
	}
	require.Equal(t, want, got)
}

func TestDLQPurge(t *testing.T) {
	t.Parallel()
	testDLQPurge(t, newSQLiteFixture(t))
}

// testDLQPurge: without --yes a purge deletes nothing, lists what it
// would delete and exits 1; with --yes it deletes (at most --max), counts
// what it deleted, and says so in --json.
func testDLQPurge(t *testing.T, f *opsFixture) {
	ctx := t.Context()
	var msgs []queue.Message
	for i := range 5 {
		msgs = append(msgs, message.New(ledger.ItemKey{Run: f.run(i, 1), Asset: "EURUSD"}, 1, false).QueueMessage())
	}
	_, err := queue.SendAll(ctx, f.b.DeadLetter, msgs, nil)
	require.NoError(t, err)
	held := func() int {
		t.Helper()
		left, err := queue.OpsOf(f.b.DeadLetter).Peek(ctx, 0)
		require.NoError(t, err)
		return len(left)
	}

	code, out, errOut := f.main("dlq", "purge")
	require.Equal(t, ExitFailure, code, errOut)
	require.Contains(t, errOut, "refused: a purge would delete 5 message(s) for good; nothing deleted. Run 'baton dlq purge --yes'")
	require.Equal(t, 5, strings.Count(out, "EURUSD"), "the messages it would delete:\n%s", out)
	require.Equal(t, 5, held(), "nothing deleted without --yes")

	code, out, errOut = f.main("dlq", "purge", "--json")
	require.Equal(t, ExitFailure, code, errOut)
	var preview struct {
		OK          bool         `json:"ok"`
		Error       string       `json:"error"`
		Purged      int          `json:"purged"`
		WouldPurge  int          `json:"would_purge"`
		DeadLetters []deadLetter `json:"dead_letters"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &preview), out)
	require.False(t, preview.OK)
	require.Zero(t, preview.Purged)
	require.Equal(t, 5, preview.WouldPurge)
	require.Len(t, preview.DeadLetters, 5)
	require.Contains(t, preview.Error, "--yes")
	require.Equal(t, 5, held())

	code, out, errOut = f.main("dlq", "purge", "--max", "2", "--yes", "--json")
	require.Equal(t, ExitOK, code, errOut)
	var done struct {
		Command string `json:"command"`
		OK      bool   `json:"ok"`
		Purged  int    `json:"purged"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &done), out)
	require.Equal(t, "dlq purge", done.Command)
	require.True(t, done.OK)
	require.Equal(t, 2, done.Purged)
	require.Equal(t, 3, held(), "at most --max deleted")

	code, out, errOut = f.main("dlq", "purge", "--yes")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "deleted 3 message(s) from the dead-letter queue")
	require.Zero(t, held())

	code, out, errOut = f.main("dlq", "purge")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "nothing to purge")
	code, _, errOut = f.main("dlq", "purge", "--max", "-1", "--yes")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "--max must not be negative")
	// The work queue got nothing: purged messages are gone, not moved.
	work, err := queue.OpsOf(f.b.Work).Peek(ctx, 0)
	require.NoError(t, err)
	require.Empty(t, work)
}
