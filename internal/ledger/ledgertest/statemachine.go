package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/batonhq/baton/internal/ledger"
)

// machineSteps is the calls of one generated sequence (a failing one
// stops at its first failure, which shrinking then moves earlier); with
// rapid's default of 100 sequences it keeps the test to a few seconds.
const machineSteps = 30

var (
	// machineOps are the calls drawn; Claim, the one with most branches,
	// twice as often as the others.
	machineOps    = []string{"claim", "claim", "complete", "fail", "release", "extend", "cancel"}
	machineOwners = []string{"a", "b", "c"}
	machineAssets = []string{"EURUSD", "GBPUSD"}
	// machineTicks are how far the clock may move between two calls.
	machineTicks = []time.Duration{0, time.Millisecond, time.Second, 3 * time.Second, 10 * time.Second, 40 * time.Second}
	// machineLeases are the claims' lease lengths.
	machineLeases = []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}
	machineSkews  = []time.Duration{0, 2 * time.Second}
	// machineEdges are offsets around the end of a lease.
	machineEdges = []time.Duration{-time.Millisecond, 0, time.Millisecond}
)

// TestStateMachine drives random sequences of item calls against the
// model (checkItemMachine).
func TestStateMachine(t *testing.T, h Harness) {
	t.Parallel()
	t.Run("MatchesModel", func(t *testing.T) {
		t.Parallel()
		store := h.NewStore(t)
		ctx := t.Context()
		rapid.Check(t, func(rt *rapid.T) { checkItemMachine(ctx, rt, store) })
	})
}

// checkItemMachine drives a random sequence of Claim, Complete, Fail,
// Release, Extend and Cancel calls by several owners, with a clock that only moves
// forward, against two items of a fresh run of store. After every call
// the error, the returned record and both stored records must be those of
// the model (model.go), and a record once terminal must never change.
func checkItemMachine(ctx context.Context, rt *rapid.T, store ledger.Store) {
	run := ledger.RunID{Job: uniqueJob(), Nominal: nominal, Generation: 1}
	model := map[string]*ledger.Item{}   // by asset; nil: absent
	terminal := map[string]ledger.Item{} // by asset: first terminal record seen in the store
	now := nominal.Add(time.Duration(rapid.IntRange(0, 59).Draw(rt, "start")) * time.Second)

	for step := range machineSteps {
		asset := rapid.SampledFrom(machineAssets).Draw(rt, "asset")
		key := ledger.ItemKey{Run: run, Asset: asset}
		cur := model[asset]
		now = drawNow(rt, now, cur)

		var (
			want, got    ledger.Item
			next         *ledger.Item
			wantErr, err error
			call         string
		)
		switch rapid.SampledFrom(machineOps).Draw(rt, "op") {
		case "claim":
			p := ledger.ClaimParams{
				Key:         key,
				Owner:       rapid.SampledFrom(machineOwners).Draw(rt, "owner"),
				LeaseUntil:  now.Add(rapid.SampledFrom(machineLeases).Draw(rt, "lease")),
				Fence:       int64(rapid.IntRange(1, 5).Draw(rt, "fence")),
				MaxAttempts: rapid.IntRange(0, 3).Draw(rt, "maxAttempts"),
				Skew:        rapid.SampledFrom(machineSkews).Draw(rt, "skew"),
				Now:         now,
			}
			call = fmt.Sprintf("Claim(%s by %s, lease until %s, max %d, skew %s)", asset, p.Owner, p.LeaseUntil.Sub(nominal), p.MaxAttempts, p.Skew)
			next, wantErr = modelClaim(cur, p)
			got, err = store.Claim(ctx, p)
		case "complete":
			owner, attempt := drawHolder(rt, cur)
			p := ledger.CompleteParams{Key: key, Owner: owner, Attempt: attempt, Result: []byte(fmt.Sprintf("result-%d", step)), Now: now}
			call = fmt.Sprintf("Complete(%s by %s#%d)", asset, owner, attempt)
			next, wantErr = modelComplete(cur, p)
			got, err = store.Complete(ctx, p)
		case "fail":
			owner, attempt := drawHolder(rt, cur)
			p := ledger.FailParams{
				Key: key, Owner: owner, Attempt: attempt, Reason: fmt.Sprintf("failure-%d", step),
				Permanent:   rapid.IntRange(0, 3).Draw(rt, "permanent") == 0,
				MaxAttempts: rapid.IntRange(0, 3).Draw(rt, "maxAttempts"),
				Now:         now,
			}
			call = fmt.Sprintf("Fail(%s by %s#%d, permanent %t, max %d)", asset, owner, attempt, p.Permanent, p.MaxAttempts)
			next, wantErr = modelFail(cur, p)
			got, err = store.Fail(ctx, p)
		case "release":
			owner, attempt := drawHolder(rt, cur)
			p := ledger.ReleaseParams{Key: key, Owner: owner, Attempt: attempt, Now: now}
			call = fmt.Sprintf("Release(%s by %s#%d)", asset, owner, attempt)
			next, wantErr = modelRelease(cur, p)
			got, err = store.Release(ctx, p)
		case "extend":
			owner, attempt := drawHolder(rt, cur)
			p := ledger.ExtendParams{Key: key, Owner: owner, Attempt: attempt, LeaseUntil: now.Add(rapid.SampledFrom(machineLeases).Draw(rt, "lease")), Now: now}
			call = fmt.Sprintf("Extend(%s by %s#%d, lease until %s)", asset, owner, attempt, p.LeaseUntil.Sub(nominal))
			next, wantErr = modelExtend(cur, p)
			got, err = store.Extend(ctx, p)
		case "cancel":
			p := ledger.CancelParams{Key: key, Reason: fmt.Sprintf("cancel-%d", step), Now: now}
			call = fmt.Sprintf("Cancel(%s)", asset)
			next, wantErr = modelCancel(cur, p)
			got, err = store.Cancel(ctx, p)
		}
		rt.Logf("step %d at %s: %s → %v", step, now.Sub(nominal), call, err)

		if wantErr == nil {
			require.NoError(rt, err, "step %d: %s", step, call)
		} else {
			require.Truef(rt, errors.Is(err, wantErr), "step %d: %s: want %v, got %v", step, call, wantErr, err)
		}
		if next != nil {
			want = *next
			requireItem(rt, want, got, "step %d: %s: returned record", step, call)
		}
		model[asset] = next

		for _, a := range machineAssets {
			k := ledger.ItemKey{Run: run, Asset: a}
			stored, err := store.GetItem(ctx, k)
			if model[a] == nil {
				require.Truef(rt, errors.Is(err, ledger.ErrNotFound), "step %d: %s: %s: want not found, got %v", step, call, a, err)
				continue
			}
			require.NoError(rt, err, "step %d: %s: get %s", step, call, a)
			requireItem(rt, *model[a], stored, "step %d: %s: stored %s", step, call, a)
			if snap, ok := terminal[a]; ok {
				requireItem(rt, snap, stored, "step %d: %s: terminal %s changed", step, call, a)
			} else if stored.State.Terminal() {
				terminal[a] = stored
			}
		}
	}
}

// drawNow moves the clock forward from now: by one of machineTicks, or,
// while cur is RUNNING, to just around the ends of its lease and of its
// lease plus a skew, where off-by-one comparisons show.
func drawNow(rt *rapid.T, now time.Time, cur *ledger.Item) time.Time {
	if cur != nil && cur.State == ledger.ItemRunning && rapid.Bool().Draw(rt, "toLeaseEnd") {
		end := cur.LeaseUntil.Add(rapid.SampledFrom(machineSkews).Draw(rt, "endSkew"))
		end = end.Add(rapid.SampledFrom(machineEdges).Draw(rt, "edge"))
		if end.After(now) {
			return end
		}
		return now
	}
	return now.Add(rapid.SampledFrom(machineTicks).Draw(rt, "tick"))
}

// drawHolder draws the owner and attempt of a Complete, Fail or Release:
// often the current holder's, sometimes the holder's previous attempt (a
// late caller after a takeover by the same owner), otherwise any.
func drawHolder(rt *rapid.T, cur *ledger.Item) (string, int) {
	if cur != nil {
		switch rapid.IntRange(0, 3).Draw(rt, "holder") {
		case 0, 1:
			return cur.Owner, cur.Attempt
		case 2:
			return cur.Owner, cur.Attempt - 1
		}
	}
	return rapid.SampledFrom(machineOwners).Draw(rt, "owner"), rapid.IntRange(0, 3).Draw(rt, "attempt")
}
