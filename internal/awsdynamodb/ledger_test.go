package awsdynamodb_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/ledger"
)

// openFanned opens the tick (job, t0) and fans it out with total items.
func openFanned(t *testing.T, s ledger.Store, job string, total int) ledger.Run {
	t.Helper()
	ctx := context.Background()
	run, outcome, err := s.OpenRun(ctx, ledger.OpenRunParams{Job: job, Nominal: t0, Fence: 1, Now: t0})
	require.NoError(t, err)
	require.Equal(t, ledger.Opened, outcome)
	run, err = s.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: total, Done: true, Now: t0})
	require.NoError(t, err)
	return run
}

func TestRunRecord(t *testing.T) {
	t.Parallel()
	b := setup(t, &awsdynamodb.Options{Retention: time.Hour})
	ctx := context.Background()
	job := uniqueName(t)
	nominal := t0.Add(time.Minute)

	run, outcome, err := b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: job, Nominal: nominal, Fence: 3, Shards: 4, Now: t0})
	require.NoError(t, err)
	require.Equal(t, ledger.Opened, outcome)
	require.Equal(t, ledger.Run{
		ID:    ledger.RunID{Job: job, Nominal: nominal, Generation: 1},
		State: ledger.RunFanningOut, Fence: 3, OpenFence: 3, Shards: 4, OpenedAt: t0, UpdatedAt: t0,
	}, run)
	require.Equal(t, 1, b.rec.Counts()["UpdateItem"])

	rec := b.raw(t, "RUN#"+job, "2026-11-21T12:01:00Z")
	require.Equal(t, "1", attrN(rec, "gen"))
	require.Equal(t, "fanning_out", attrS(rec, "state"))
	require.Equal(t, "3", attrN(rec, "fence"))
	require.Equal(t, "4", attrN(rec, "shards"))
	require.Equal(t, strconv.FormatInt(t0.UnixNano(), 10), attrN(rec, "opened_at"))
	require.NotContains(t, rec, "ttl")

	run, err = b.ledger.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 3, Cursor: 6, Done: true, Now: t0.Add(time.Second)})
	require.NoError(t, err)
	require.Equal(t, ledger.RunFannedOut, run.State)
	require.Equal(t, 6, run.Total)

	done := t0.Add(time.Minute)
	run, err = b.ledger.FinishRun(ctx, ledger.FinishRunParams{ID: run.ID, Succeeded: 5, Dead: 1, Now: done})
	require.NoError(t, err)
	require.Equal(t, ledger.RunPartial, run.State)
	require.Equal(t, done, run.FinishedAt)
	rec = b.raw(t, "RUN#"+job, "2026-11-21T12:01:00Z")
	require.Equal(t, strconv.FormatInt(done.Add(time.Hour).Unix(), 10), attrN(rec, "ttl"), "finished runs expire after the retention")

	// A forced replay opens generation 2 and drops the ttl.
	run, outcome, err = b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: job, Nominal: nominal, Fence: 4, Force: true, Now: done})
	require.NoError(t, err)
	require.Equal(t, ledger.Opened, outcome)
	require.Equal(t, ledger.Run{
		ID:    ledger.RunID{Job: job, Nominal: nominal, Generation: 2},
		State: ledger.RunFanningOut, Fence: 4, OpenFence: 4, Shards: 1, OpenedAt: done, UpdatedAt: done,
	}, run)
	require.NotContains(t, b.raw(t, "RUN#"+job, "2026-11-21T12:01:00Z"), "ttl")
}

// A run record of an earlier version has no open fence: resuming it must
// not take the resumer's fence for the opener's (messages the first
// coordinator sent would read as unvouched), so it keeps reading 0.
func TestRunRecordOfEarlierVersionHasNoOpenFence(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	job := uniqueName(t)
	nominal := t0.Add(time.Minute)
	_, _, err := b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: job, Nominal: nominal, Fence: 3, Now: t0})
	require.NoError(t, err)
	_, err = b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(b.table),
		Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "RUN#" + job}, "sk": &types.AttributeValueMemberS{Value: "2026-11-21T12:01:00Z"}},
		UpdateExpression: aws.String("REMOVE open_fence, open_fence_tok"),
	})
	require.NoError(t, err)
	got, err := b.ledger.GetRun(ctx, job, nominal)
	require.NoError(t, err)
	require.Zero(t, got.OpenFence)

	run, outcome, err := b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: job, Nominal: nominal, Fence: 5, Now: t0.Add(time.Second)})
	require.NoError(t, err)
	require.Equal(t, ledger.Resumed, outcome)
	require.Equal(t, int64(5), run.Fence)
	require.Zero(t, run.OpenFence, "the resumer's fence is not the opener's")
	require.Equal(t, "5", attrN(b.raw(t, "RUN#"+job, "2026-11-21T12:01:00Z"), "open_fence"), "written, but not read as the opener's")
}

// A run record of an earlier version has no shard count: it reads 0 (the
// core settles it as one shard); a resume by this version gives it the
// resumer's count, a forced generation its opener's.
func TestRunRecordOfEarlierVersionHasNoShards(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	job := uniqueName(t)
	nominal := t0.Add(time.Minute)
	_, _, err := b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: job, Nominal: nominal, Fence: 3, Shards: 5, Now: t0})
	require.NoError(t, err)
	_, err = b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(b.table),
		Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "RUN#" + job}, "sk": &types.AttributeValueMemberS{Value: "2026-11-21T12:01:00Z"}},
		UpdateExpression: aws.String("REMOVE shards"),
	})
	require.NoError(t, err)
	got, err := b.ledger.GetRun(ctx, job, nominal)
	require.NoError(t, err)
	require.Zero(t, got.Shards)

	run, outcome, err := b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: job, Nominal: nominal, Fence: 4, Shards: 7, Now: t0.Add(time.Second)})
	require.NoError(t, err)
	require.Equal(t, ledger.Resumed, outcome)
	require.Equal(t, 7, run.Shards, "set by the first write of this version")
	run, _, err = b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: job, Nominal: nominal, Fence: 5, Shards: 2, Force: true, Now: t0.Add(2 * time.Second)})
	require.NoError(t, err)
	require.Equal(t, 2, run.Shards)
}

func TestOpenRunOutcomes(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	job := uniqueName(t)
	open := func(fence int64, force bool) (ledger.Run, ledger.OpenOutcome, error) {
		return b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: job, Nominal: t0, Fence: fence, Force: force, Now: t0})
	}
	_, outcome, err := open(2, false)
	require.NoError(t, err)
	require.Equal(t, ledger.Opened, outcome)

	run, outcome, err := open(3, false)
	require.NoError(t, err)
	require.Equal(t, ledger.Resumed, outcome)
	require.Equal(t, int64(3), run.Fence)

	run, _, err = open(2, false)
	require.ErrorIs(t, err, ledger.ErrConflict)
	require.Equal(t, int64(3), run.Fence, "the conflicting record comes with the error")

	_, err = b.ledger.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 3, Cursor: 1, Done: true, Now: t0})
	require.NoError(t, err)
	b.rec.Counts()
	run, outcome, err = open(9, false)
	require.NoError(t, err)
	require.Equal(t, ledger.AlreadyFannedOut, outcome)
	require.Equal(t, ledger.RunFannedOut, run.State)
	require.Equal(t, int64(3), run.Fence, "nothing written")

	run, outcome, err = open(9, true)
	require.NoError(t, err)
	require.Equal(t, ledger.Opened, outcome)
	require.Equal(t, 2, run.ID.Generation)
}

// Any number of concurrent opens of one tick produce exactly one Opened.
func TestOpenRunConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	job := uniqueName(t)
	const n = 8
	outcomes := make(chan ledger.OpenOutcome, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			_, outcome, err := b.ledger.OpenRun(context.Background(), ledger.OpenRunParams{Job: job, Nominal: t0, Fence: 1, Now: t0})
			require.NoError(t, err)
			outcomes <- outcome
		})
	}
	wg.Wait()
	close(outcomes)
	count := map[ledger.OpenOutcome]int{}
	for o := range outcomes {
		count[o]++
	}
	require.Equal(t, map[ledger.OpenOutcome]int{ledger.Opened: 1, ledger.Resumed: n - 1}, count)
}

// Concurrent forced replays each open their own generation.
func TestOpenRunForceConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	job := uniqueName(t)
	const n = 3
	gens := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			run, outcome, err := b.ledger.OpenRun(context.Background(), ledger.OpenRunParams{Job: job, Nominal: t0, Fence: 1, Force: true, Now: t0})
			require.NoError(t, err)
			require.Equal(t, ledger.Opened, outcome)
			gens <- run.ID.Generation
		})
	}
	wg.Wait()
	close(gens)
	seen := map[int]bool{}
	for g := range gens {
		seen[g] = true
	}
	require.Equal(t, map[int]bool{1: true, 2: true, 3: true}, seen)
}

func TestFinishRunErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	job := uniqueName(t)
	id := ledger.RunID{Job: job, Nominal: t0, Generation: 1}
	_, err := b.ledger.FinishRun(ctx, ledger.FinishRunParams{ID: id, Now: t0})
	require.ErrorIs(t, err, ledger.ErrNotFound)
	_, err = b.ledger.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: id, Fence: 1, Cursor: 1, Now: t0})
	require.ErrorIs(t, err, ledger.ErrNotFound)

	run := openFanned(t, b.ledger, job, 1)
	_, err = b.ledger.FinishRun(ctx, ledger.FinishRunParams{ID: ledger.RunID{Job: job, Nominal: t0, Generation: 2}, Now: t0})
	require.ErrorIs(t, err, ledger.ErrConflict)
	done, err := b.ledger.FinishRun(ctx, ledger.FinishRunParams{ID: run.ID, Succeeded: 1, Now: t0})
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, done.State)
	again, err := b.ledger.FinishRun(ctx, ledger.FinishRunParams{ID: run.ID, Succeeded: 1, Now: t0})
	require.ErrorIs(t, err, ledger.ErrTerminal)
	require.Equal(t, done, again)
}

func TestListRuns(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	job, other := uniqueName(t), uniqueName(t)
	var nominals []time.Time
	for i := range 5 {
		n := t0.Add(time.Duration(i) * time.Minute)
		nominals = append(nominals, n)
		_, _, err := b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: job, Nominal: n, Fence: 1, Now: n})
		require.NoError(t, err)
	}
	_, _, err := b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: other, Nominal: t0, Fence: 1, Now: t0})
	require.NoError(t, err)

	nominalsOf := func(runs []ledger.Run) []time.Time {
		var out []time.Time
		for _, r := range runs {
			require.Equal(t, job, r.ID.Job)
			out = append(out, r.ID.Nominal)
		}
		return out
	}
	b.rec.Counts()
	runs, err := b.ledger.ListRuns(ctx, ledger.ListRunsParams{Job: job})
	require.NoError(t, err)
	require.Equal(t, []time.Time{nominals[4], nominals[3], nominals[2], nominals[1], nominals[0]}, nominalsOf(runs))
	require.Equal(t, map[string]int{"Query": 1}, b.rec.Counts())

	runs, err = b.ledger.ListRuns(ctx, ledger.ListRunsParams{Job: job, Before: nominals[3], Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []time.Time{nominals[2], nominals[1]}, nominalsOf(runs))

	runs, err = b.ledger.ListRuns(ctx, ledger.ListRunsParams{Job: job, Before: nominals[3].Add(time.Millisecond), Limit: 1})
	require.NoError(t, err)
	require.Equal(t, []time.Time{nominals[3]}, nominalsOf(runs), "a bound inside a second admits that second")

	runs, err = b.ledger.ListRuns(ctx, ledger.ListRunsParams{Job: uniqueName(t)})
	require.NoError(t, err)
	require.Empty(t, runs)
}

func TestItemRecord(t *testing.T) {
	t.Parallel()
	b := setup(t, &awsdynamodb.Options{Retention: time.Hour})
	ctx := context.Background()
	run := openFanned(t, b.ledger, uniqueName(t), 3)
	pk := "ITEMS#" + run.ID.String()
	key := func(asset string) ledger.ItemKey { return ledger.ItemKey{Run: run.ID, Asset: asset} }

	it, err := b.ledger.Claim(ctx, ledger.ClaimParams{Key: key("EURUSD"), Owner: "w1", LeaseUntil: t0.Add(time.Minute), Fence: 1, Now: t0})
	require.NoError(t, err)
	require.Equal(t, ledger.Item{
		Key: key("EURUSD"), State: ledger.ItemRunning, Owner: "w1", Attempt: 1, LeaseUntil: t0.Add(time.Minute),
		Fence: 1, CreatedAt: t0, StartedAt: t0, UpdatedAt: t0,
	}, it)
	rec := b.raw(t, pk, "EURUSD")
	require.Equal(t, "RUNNING", attrS(rec, "state"))
	require.Equal(t, "1", attrN(rec, "attempt"))
	require.NotContains(t, rec, "ttl")

	done := t0.Add(time.Second)
	it, err = b.ledger.Complete(ctx, ledger.CompleteParams{Key: key("EURUSD"), Owner: "w1", Attempt: 1, Result: []byte(`{"close":1.08}`), Now: done})
	require.NoError(t, err)
	require.Equal(t, ledger.ItemSucceeded, it.State)
	require.Equal(t, []byte(`{"close":1.08}`), it.Result)
	require.Equal(t, done, it.FinishedAt)
	require.Equal(t, strconv.FormatInt(done.Add(time.Hour).Unix(), 10), attrN(b.raw(t, pk, "EURUSD"), "ttl"))

	// FAILED is not terminal: no ttl. DEAD is.
	_, err = b.ledger.Claim(ctx, ledger.ClaimParams{Key: key("GBPUSD"), Owner: "w1", LeaseUntil: t0.Add(time.Minute), Now: t0})
	require.NoError(t, err)
	it, err = b.ledger.Fail(ctx, ledger.FailParams{Key: key("GBPUSD"), Owner: "w1", Attempt: 1, Reason: "timeout", MaxAttempts: 2, Now: done})
	require.NoError(t, err)
	require.Equal(t, ledger.ItemFailed, it.State)
	require.Equal(t, "timeout", it.Error)
	require.True(t, it.FinishedAt.IsZero())
	require.NotContains(t, b.raw(t, pk, "GBPUSD"), "ttl")
	_, err = b.ledger.Claim(ctx, ledger.ClaimParams{Key: key("GBPUSD"), Owner: "w2", LeaseUntil: t0.Add(time.Minute), Now: done})
	require.NoError(t, err)
	it, err = b.ledger.Fail(ctx, ledger.FailParams{Key: key("GBPUSD"), Owner: "w2", Attempt: 2, Reason: "timeout again", MaxAttempts: 2, Now: done})
	require.NoError(t, err)
	require.Equal(t, ledger.ItemDead, it.State)
	require.Contains(t, b.raw(t, pk, "GBPUSD"), "ttl")

	it, err = b.ledger.Cancel(ctx, ledger.CancelParams{Key: key("USDJPY"), Reason: "operator", Now: done})
	require.NoError(t, err)
	require.Equal(t, ledger.Item{Key: key("USDJPY"), State: ledger.ItemCancelled, Error: "operator", CreatedAt: done, FinishedAt: done, UpdatedAt: done}, it)
	require.Contains(t, b.raw(t, pk, "USDJPY"), "ttl")

	b.rec.Counts()
	items, err := b.ledger.ListItems(ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"Query": 1}, b.rec.Counts())
	var assets []string
	for _, it := range items {
		assets = append(assets, it.Key.Asset)
		require.Equal(t, run.ID, it.Key.Run)
	}
	require.Equal(t, []string{"EURUSD", "GBPUSD", "USDJPY"}, assets)
}

func TestItemNoRetention(t *testing.T) {
	t.Parallel()
	b := setup(t, &awsdynamodb.Options{Retention: -1})
	ctx := context.Background()
	run := openFanned(t, b.ledger, uniqueName(t), 1)
	key := ledger.ItemKey{Run: run.ID, Asset: "EURUSD"}
	_, err := b.ledger.Cancel(ctx, ledger.CancelParams{Key: key, Now: t0})
	require.NoError(t, err)
	_, err = b.ledger.FinishRun(ctx, ledger.FinishRunParams{ID: run.ID, Cancelled: 1, Now: t0})
	require.NoError(t, err)
	require.NotContains(t, b.raw(t, "ITEMS#"+run.ID.String(), "EURUSD"), "ttl")
	require.NotContains(t, b.raw(t, "RUN#"+run.ID.Job, "2026-11-21T12:00:00Z"), "ttl")
}

// A claimable item whose attempts reached MaxAttempts goes to DEAD.
func TestClaimExhausted(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	run := openFanned(t, b.ledger, uniqueName(t), 1)
	key := ledger.ItemKey{Run: run.ID, Asset: "EURUSD"}
	_, err := b.ledger.Claim(ctx, ledger.ClaimParams{Key: key, Owner: "w1", LeaseUntil: t0.Add(time.Minute), MaxAttempts: 1, Now: t0})
	require.NoError(t, err)
	b.rec.Counts()

	// Still held at LeaseUntil+skew-1ns.
	skew := time.Second
	_, err = b.ledger.Claim(ctx, ledger.ClaimParams{Key: key, Owner: "w2", LeaseUntil: t0.Add(2 * time.Minute), MaxAttempts: 1, Skew: skew, Now: t0.Add(time.Minute + skew - 1)})
	require.ErrorIs(t, err, ledger.ErrHeld)

	later := t0.Add(time.Minute + skew)
	it, err := b.ledger.Claim(ctx, ledger.ClaimParams{Key: key, Owner: "w2", LeaseUntil: t0.Add(2 * time.Minute), MaxAttempts: 1, Skew: skew, Now: later})
	require.ErrorIs(t, err, ledger.ErrTerminal)
	require.Equal(t, ledger.ItemDead, it.State)
	require.Equal(t, "attempts exhausted", it.Error)
	require.Equal(t, 1, it.Attempt)
	require.Equal(t, "w1", it.Owner)
	require.Equal(t, later, it.FinishedAt)

	got, err := b.ledger.GetItem(ctx, key)
	require.NoError(t, err)
	require.Equal(t, it, got)
}

// Lost responses and resent writes are settled from the record.
func TestItemLostAndResentWrites(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	run := openFanned(t, b.ledger, uniqueName(t), 2)
	key := ledger.ItemKey{Run: run.ID, Asset: "EURUSD"}
	b.rec.Counts()

	b.rec.LoseFunc = func(op string) bool { return op == "PutItem" || op == "UpdateItem" }
	it, err := b.ledger.Claim(ctx, ledger.ClaimParams{Key: key, Owner: "w1", LeaseUntil: t0.Add(time.Minute), Now: t0})
	require.NoError(t, err)
	require.Equal(t, 1, it.Attempt)
	require.Equal(t, map[string]int{"PutItem": 1, "GetItem": 1}, b.rec.Counts())
	it, err = b.ledger.Complete(ctx, ledger.CompleteParams{Key: key, Owner: "w1", Attempt: 1, Result: []byte("r"), Now: t0})
	require.NoError(t, err)
	require.Equal(t, ledger.ItemSucceeded, it.State)
	b.rec.LoseFunc = nil

	// Resent: the second send of a claim fails (held by the first), of a
	// completion fails (terminal); both are recognised as the caller's.
	key2 := ledger.ItemKey{Run: run.ID, Asset: "GBPUSD"}
	b.rec.DupFunc = func(op string) bool { return op == "PutItem" || op == "UpdateItem" }
	it, err = b.ledger.Claim(ctx, ledger.ClaimParams{Key: key2, Owner: "w1", LeaseUntil: t0.Add(time.Minute), Now: t0})
	require.NoError(t, err)
	require.Equal(t, 1, it.Attempt)
	it, err = b.ledger.Complete(ctx, ledger.CompleteParams{Key: key2, Owner: "w1", Attempt: 1, Now: t0})
	require.NoError(t, err)
	require.Equal(t, ledger.ItemSucceeded, it.State)
	b.rec.DupFunc = nil
	_, err = b.ledger.Complete(ctx, ledger.CompleteParams{Key: key2, Owner: "w1", Attempt: 1, Now: t0})
	require.ErrorIs(t, err, ledger.ErrTerminal, "a real second completion is refused")
}

func TestRunLostAndResentWrites(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	job := uniqueName(t)

	b.rec.LoseFunc = func(op string) bool { return op == "UpdateItem" }
	run, outcome, err := b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: job, Nominal: t0, Fence: 1, Now: t0})
	require.NoError(t, err)
	require.Equal(t, ledger.Opened, outcome)
	b.rec.LoseFunc = nil

	b.rec.DupFunc = func(op string) bool { return op == "UpdateItem" }
	run, err = b.ledger.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: run.ID, Fence: 1, Cursor: 2, Done: true, Now: t0})
	require.NoError(t, err)
	require.Equal(t, ledger.RunFannedOut, run.State)
	run, err = b.ledger.FinishRun(ctx, ledger.FinishRunParams{ID: run.ID, Succeeded: 2, Now: t0})
	require.NoError(t, err)
	require.Equal(t, ledger.RunComplete, run.State)
	run, outcome, err = b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: job, Nominal: t0, Fence: 1, Force: true, Now: t0})
	require.NoError(t, err)
	require.Equal(t, ledger.Opened, outcome)
	require.Equal(t, 2, run.ID.Generation, "a resent forced open is one generation")
}

// An empty owner is stored as an empty string.
func TestClaimEmptyOwner(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	run := openFanned(t, b.ledger, uniqueName(t), 1)
	it, err := b.ledger.Claim(context.Background(), ledger.ClaimParams{Key: ledger.ItemKey{Run: run.ID, Asset: "A"}, LeaseUntil: t0.Add(time.Minute), Now: t0})
	require.NoError(t, err)
	require.Equal(t, "", it.Owner)
	it, err = b.ledger.Complete(context.Background(), ledger.CompleteParams{Key: it.Key, Attempt: 1, Now: t0})
	require.NoError(t, err)
	require.Equal(t, ledger.ItemSucceeded, it.State)
}

func TestLedgerInvalidInput(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	_, _, err := b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: "no/slash", Nominal: t0, Now: t0})
	require.Error(t, err)
	_, err = b.ledger.Claim(ctx, ledger.ClaimParams{Key: ledger.ItemKey{Run: ledger.RunID{Job: "fx", Nominal: t0, Generation: 0}, Asset: "A"}, Owner: "w", Now: t0})
	require.Error(t, err)
	_, err = b.ledger.Claim(ctx, ledger.ClaimParams{Key: ledger.ItemKey{Run: ledger.RunID{Job: "fx", Nominal: t0, Generation: 1}, Asset: "A/B"}, Owner: "w", Now: t0})
	require.Error(t, err)
	_, err = b.ledger.AdvanceRun(ctx, ledger.AdvanceRunParams{ID: ledger.RunID{Job: "fx", Nominal: t0, Generation: 1}, Cursor: -1, Now: t0})
	require.Error(t, err)
	require.Empty(t, b.rec.Counts(), "invalid input costs no call")
}

// On a server that does not return the old record, a refused claim whose
// record is claimable by the time it is read is retried, with the claim
// UpdateItem (here: the first claim's PutItem is refused, and the record
// read back is absent).
func TestClaimRetriesWhenClaimableMeanwhile(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	run := openFanned(t, b.ledger, uniqueName(t), 1)
	b.rec.Counts()
	refused := false
	b.rec.FailFunc = func(op string) error {
		if op == "PutItem" && !refused {
			refused = true
			return &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
		}
		return nil
	}
	it, err := b.ledger.Claim(context.Background(), ledger.ClaimParams{Key: ledger.ItemKey{Run: run.ID, Asset: "A"}, Owner: "w", LeaseUntil: t0.Add(time.Minute), Now: t0})
	require.NoError(t, err)
	require.Equal(t, 1, it.Attempt)
	require.Equal(t, map[string]int{"PutItem": 1, "GetItem": 1, "UpdateItem": 1}, b.rec.Counts())
}

// A run record of an earlier version spread over partitions has no
// parts_page: its items were placed by name, and it keeps reading so
// (Pages false, items found by ledger.ItemPartition) even when this
// version resumes it with Pages: the resuming write's token is not the
// opener's.
func TestRunRecordOfEarlierVersionIsPartitionedByName(t *testing.T) {
	t.Parallel()
	b := setup(t, &awsdynamodb.Options{ShardsPerPartition: 2})
	ctx := context.Background()
	job := uniqueName(t)
	nominal := t0.Add(time.Minute)
	run, _, err := b.ledger.OpenRun(ctx, ledger.OpenRunParams{Job: job, Nominal: nominal, Fence: 3, Shards: 7, Pages: true, Now: t0})
	require.NoError(t, err)
	require.True(t, run.Pages)
	_, err = b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(b.table),
		Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "RUN#" + job}, "sk": &types.AttributeValueMemberS{Value: "2026-11-21T12:01:00Z"}},
		UpdateExpression: aws.String("REMOVE parts_page, parts_page_tok"),
	})
	require.NoError(t, err)
	fresh := awsdynamodb.NewLedgerStore(b.client, b.table, &awsdynamodb.Options{ShardsPerPartition: 2})
	got, err := fresh.GetRun(ctx, job, nominal)
	require.NoError(t, err)
	require.Equal(t, 4, got.Partitions)
	require.False(t, got.Pages)

	run, outcome, err := fresh.OpenRun(ctx, ledger.OpenRunParams{Job: job, Nominal: nominal, Fence: 4, Shards: 7, Pages: true, Now: t0.Add(time.Second)})
	require.NoError(t, err)
	require.Equal(t, ledger.Resumed, outcome)
	require.False(t, run.Pages, "written by the resume, but not read as the opener's")
	require.Equal(t, "1", attrN(b.raw(t, "RUN#"+job, "2026-11-21T12:01:00Z"), "parts_page"))
	_, err = fresh.Claim(ctx, ledger.ClaimParams{Key: ledger.ItemKey{Run: run.ID, Asset: "N07"}, Owner: "o", LeaseUntil: t0.Add(time.Minute), Now: t0})
	require.NoError(t, err, "no page is needed to place it")
	rec := b.raw(t, fmt.Sprintf("ITEMS#%s#P%d", run.ID, ledger.ItemPartition("N07", 4)), "N07")
	require.Equal(t, "RUNNING", attrS(rec, "state"), "placed by name")
}
