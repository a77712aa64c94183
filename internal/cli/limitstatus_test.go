package cli

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/ratelimit"
)

// limitedJob's items each take a slot of their tenant (a keyed PerItem
// in-flight limit of 1): "b1" of tenant "tenant/α#1", "b2" of
// "tenant-β". b2's processor answers a 503 with a Retry-After of 30 s.
func limitedJob() baton.Job {
	return baton.Job{Name: "limited", Schedule: "rate(1 minute)", Assets: []string{"b1", "b2"},
		RateLimits: []baton.RateLimit{{Name: "per-tenant", InFlight: 1, Keyed: true, PerItem: true,
			Key: func(t baton.Task) string {
				if t.Asset == "b1" {
					return "tenant/α#1"
				}
				return "tenant-β"
			}}},
		Processor: baton.ProcessorFunc(func(_ context.Context, t baton.Task) ([]byte, error) {
			return nil, baton.RetryAfter(30*time.Second, errors.New("GET /feed: 503 Service Unavailable"))
		}),
	}
}

func TestStatusShowsLimitsAndWaitingItems(t *testing.T) {
	t.Parallel()
	testStatusShowsLimitsAndWaitingItems(t, newSQLiteFixture(t))
}

// A keyed in-flight limit's key held by an item of an earlier tick: the
// item of that key is handed back by the consumer (after
// consumer.KeyedWait) and the other one fails with a Retry-After. status
// --json shows the hottest key with its holder (the earlier item) and
// its waiter, the waiter's next attempt (the consumer's now plus the
// limit's delay, a second), and the failed item's next attempt (its now
// plus 30 s) and last error; the text form says the same.
func testStatusShowsLimitsAndWaitingItems(t *testing.T, f *opsFixture) {
	ctx := t.Context()
	cat, err := baton.NewCatalog(limitedJob())
	require.NoError(t, err)
	// The consumer's clock stands still: the noted times are exact.
	now := time.Now().UTC().Truncate(time.Millisecond)
	eng, err := exec.New(f.b, exec.Options{Catalog: cat, Owner: "test", NowFunc: func() time.Time { return now }})
	require.NoError(t, err)
	tick := now.Truncate(time.Minute)
	holderItem := ledger.ItemKey{Run: ledger.RunID{Job: "limited", Nominal: tick.Add(-time.Minute), Generation: 1}, Asset: "b1"}
	holder := "host/7/consumer/" + holderItem.String() + "/k3y"
	busy := ratelimit.KeyedName("per-tenant", "tenant/α#1")
	require.NoError(t, f.b.RateLimits.Hold(ctx, ratelimit.SlotParams{Name: busy, Slot: 0, Holder: holder, Until: now.Add(time.Hour), Now: now}))

	_, err = eng.Trigger(ctx, "limited", tick, false)
	require.NoError(t, err)
	run := ledger.RunID{Job: "limited", Nominal: tick, Generation: 1}
	waiter, failed := ledger.ItemKey{Run: run, Asset: "b1"}, ledger.ItemKey{Run: run, Asset: "b2"}
	var seen []consumer.MessageOutcome
	deadline := time.Now().Add(30 * time.Second)
	for !handled(seen, waiter, consumer.StatusLimited) || !handled(seen, failed, consumer.StatusFailed) {
		require.True(t, time.Now().Before(deadline), "outcomes so far: %+v", seen)
		msgs, err := f.b.Work.Receive(ctx, queue.ReceiveParams{Max: queue.MaxBatch, Visibility: time.Minute, Wait: time.Second, Now: time.Now()})
		require.NoError(t, err)
		if len(msgs) > 0 {
			seen = append(seen, eng.Consumer.Handle(ctx, time.Now().Add(30*time.Second), msgs).Items...)
		}
	}

	code, out, errOut := runCatalog(t, cat, append([]string{"status", "--job", "limited", "--json"}, f.flags...)...)
	require.Equal(t, ExitOK, code, errOut)
	var rep statusReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Len(t, rep.Limits, 1, out)
	l := rep.Limits[0]
	require.Equal(t, "per-tenant", l.Name)
	require.Empty(t, l.Error)
	require.Equal(t, 1, l.Waiting)
	require.NotEmpty(t, l.Keys, out)
	hot := l.Keys[0]
	require.Equal(t, "tenant/α#1", hot.Key, "the hottest key: a slot held and an item waiting")
	require.Len(t, hot.Holders, 1)
	require.Equal(t, holderItem.String(), hot.Holders[0].Item)
	require.Equal(t, "host/7/consumer", hot.Holders[0].Owner)
	require.True(t, now.Add(time.Hour).Equal(hot.Holders[0].Until))
	require.Len(t, hot.Waiters, 1)
	require.Equal(t, waiter.String(), hot.Waiters[0].Item)
	require.True(t, now.Add(time.Second).Equal(hot.Waiters[0].NextAttempt), "next attempt %s, want %s", hot.Waiters[0].NextAttempt, now.Add(time.Second))
	for _, k := range l.Keys[1:] {
		require.Empty(t, k.Holders, "%s: b2's slot was freed when it failed", k.Key)
	}

	byKey := map[string]itemStatus{}
	for _, it := range rep.Waiting {
		byKey[it.Key] = it
	}
	require.Len(t, byKey, 2, out)
	w := byKey[waiter.String()]
	require.NotNil(t, w.NextAttempt)
	require.True(t, now.Add(time.Second).Equal(*w.NextAttempt))
	require.Equal(t, &waitingOn{Kind: "limit", Limit: "per-tenant", Key: "tenant/α#1"}, w.WaitingOn)
	require.Zero(t, w.Attempt, "handed back before its first attempt")
	fl := byKey[failed.String()]
	require.NotNil(t, fl.NextAttempt)
	require.True(t, now.Add(30*time.Second).Equal(*fl.NextAttempt), "next attempt %s", fl.NextAttempt)
	require.Equal(t, &waitingOn{Kind: "retry_delay"}, fl.WaitingOn)
	require.Contains(t, fl.Error, "503 Service Unavailable")
	require.Equal(t, 1, fl.Attempt)

	// The run's item list carries them too.
	code, out, errOut = runCatalog(t, cat, append([]string{"status", "--run", run.String(), "--json"}, f.flags...)...)
	require.Equal(t, ExitOK, code, errOut)
	var detail statusReport
	require.NoError(t, json.Unmarshal([]byte(out), &detail), out)
	var raw struct {
		Run struct {
			Items  []map[string]any `json:"item_list"`
			Counts map[string]int   `json:"items"`
		} `json:"run"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &raw))
	require.Equal(t, 1, raw.Run.Counts["FAILED"], "b2 failed; b1, never attempted, is not FAILED: %v", raw.Run.Counts)
	require.Equal(t, 1, raw.Run.Counts["PENDING"], "b1 waits before its first attempt: %v", raw.Run.Counts)
	for _, it := range raw.Run.Items {
		require.Contains(t, it, "next_attempt", it)
		require.Contains(t, it, "waiting_on", it)
	}

	code, out, errOut = runCatalog(t, cat, append([]string{"status", "--run", run.String()}, f.flags...)...)
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "waiting: b1, next attempt "+rfc(now.Add(time.Second))+`, on limit per-tenant key "tenant/α#1"`)
	require.Contains(t, out, "waiting: b2, next attempt "+rfc(now.Add(30*time.Second))+", on retry delay")

	code, out, errOut = runCatalog(t, cat, append([]string{"status", "--job", "limited"}, f.flags...)...)
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "rate limits now")
	require.Contains(t, out, "per-tenant: 1 in flight per key; 1 item(s) waiting")
	require.Regexp(t, `"tenant/α#1"\s+1/1 held\s+1 waiting`, out)
	require.Regexp(t, `slot 0\s+held by `+regexp.QuoteMeta(holderItem.String()), out)
	require.Regexp(t, `waiter\s+`+regexp.QuoteMeta(waiter.String())+`\s+next attempt `, out)
	require.Regexp(t, regexp.QuoteMeta(failed.String())+`\s+1\s+\S+ \((in|due)`, out)
	require.Contains(t, out, "retry delay")
	require.Contains(t, out, `limit per-tenant key "tenant/α#1"`)
}
