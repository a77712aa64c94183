package ledgertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
)

// itemLease is how long the cases' claims hold an item.
const itemLease = 30 * time.Second

// claim claims key for owner at now, with a lease of itemLease and fence
// 1, which must succeed.
func (b *bundle) claim(t *testing.T, key ledger.ItemKey, owner string, now time.Time) ledger.Item {
	t.Helper()
	it, err := b.store.Claim(b.ctx, ledger.ClaimParams{Key: key, Owner: owner, LeaseUntil: now.Add(itemLease), Fence: 1, Now: now})
	require.NoError(t, err, "claim %s by %s", key, owner)
	return it
}

// itemIn brings key into state and returns the stored record: claimed by
// "a" at 1s (attempt 1, fence 1), then at 2s failed ("boom"), completed
// ("ok"), failed permanently ("bad input") or cancelled ("stop").
func (b *bundle) itemIn(t *testing.T, key ledger.ItemKey, state ledger.ItemState) ledger.Item {
	t.Helper()
	it := b.claim(t, key, "a", at(time.Second))
	var err error
	now := at(2 * time.Second)
	switch state {
	case ledger.ItemRunning:
		return it
	case ledger.ItemFailed:
		it, err = b.store.Fail(b.ctx, ledger.FailParams{Key: key, Owner: "a", Attempt: 1, Reason: "boom", Now: now})
	case ledger.ItemSucceeded:
		it, err = b.store.Complete(b.ctx, ledger.CompleteParams{Key: key, Owner: "a", Attempt: 1, Result: []byte("ok"), Now: now})
	case ledger.ItemDead:
		it, err = b.store.Fail(b.ctx, ledger.FailParams{Key: key, Owner: "a", Attempt: 1, Reason: "bad input", Permanent: true, Now: now})
	case ledger.ItemCancelled:
		it, err = b.store.Cancel(b.ctx, ledger.CancelParams{Key: key, Reason: "stop", Now: now})
	default:
		t.Fatalf("itemIn: unknown state %q", state)
	}
	require.NoError(t, err)
	require.Equal(t, state, it.State)
	return it
}

var terminalStates = []ledger.ItemState{ledger.ItemSucceeded, ledger.ItemDead, ledger.ItemCancelled}

// TestClaim: Claim's every outcome, from each state an item can be in.
func TestClaim(t *testing.T, h Harness) {
	t.Parallel()
	t.Run("AbsentBecomesRunningAttempt1", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		key := b.key("EURUSD")
		now := at(1250 * time.Millisecond)
		it, err := b.store.Claim(b.ctx, ledger.ClaimParams{
			Key: key, Owner: "a", LeaseUntil: now.Add(itemLease), Fence: 7, MaxAttempts: 3, Skew: time.Second, Now: now,
		})
		require.NoError(t, err)
		want := ledger.Item{
			Key: key, State: ledger.ItemRunning, Owner: "a", Attempt: 1, LeaseUntil: now.Add(itemLease), Fence: 7,
			CreatedAt: now, StartedAt: now, UpdatedAt: now,
		}
		requireItem(t, want, it)
		requireItem(t, want, b.getItem(t, key))
		require.Equal(t, now.Add(itemLease), b.getItem(t, key).LeaseUntil.UTC())
	})

	t.Run("FailedIsClaimedWithNextAttempt", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		key := b.key("EURUSD")
		failed := b.itemIn(t, key, ledger.ItemFailed)
		now := at(3 * time.Second)
		it, err := b.store.Claim(b.ctx, ledger.ClaimParams{Key: key, Owner: "b", LeaseUntil: now.Add(itemLease), Fence: 2, Now: now})
		require.NoError(t, err)
		want := failed
		want.State, want.Owner, want.Attempt, want.LeaseUntil, want.Fence = ledger.ItemRunning, "b", 2, now.Add(itemLease), 2
		want.StartedAt, want.UpdatedAt = now, now
		requireItem(t, want, it)
		requireItem(t, want, b.getItem(t, key))
	})

	t.Run("FailedIsClaimedBySameOwner", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		key := b.key("EURUSD")
		b.itemIn(t, key, ledger.ItemFailed)
		it := b.claim(t, key, "a", at(3*time.Second))
		require.Equal(t, 2, it.Attempt)
		require.Equal(t, ledger.ItemRunning, it.State)
	})

	t.Run("ExpiredRunningIsTakenOver", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		key := b.key("EURUSD")
		running := b.itemIn(t, key, ledger.ItemRunning)
		now := running.LeaseUntil // LeaseUntil+0 <= now: expired
		it, err := b.store.Claim(b.ctx, ledger.ClaimParams{Key: key, Owner: "b", LeaseUntil: now.Add(itemLease), Fence: 3, Now: now})
		require.NoError(t, err)
		want := running
		want.Owner, want.Attempt, want.LeaseUntil, want.Fence, want.StartedAt, want.UpdatedAt = "b", 2, now.Add(itemLease), 3, now, now
		requireItem(t, want, it)
		requireItem(t, want, b.getItem(t, key))
	})

	t.Run("LiveRunningIsHeld", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		key := b.key("EURUSD")
		running := b.itemIn(t, key, ledger.ItemRunning)
		for _, owner := range []string{"b", "a"} { // "a" holds it: a claim is never re-entrant
			now := running.LeaseUntil.Add(-time.Millisecond)
			it, err := b.store.Claim(b.ctx, ledger.ClaimParams{Key: key, Owner: owner, LeaseUntil: now.Add(itemLease), Fence: 9, Now: now})
			require.ErrorIs(t, err, ledger.ErrHeld, "owner %s", owner)
			requireItem(t, running, it, "the current record comes with ErrHeld")
			requireItem(t, running, b.getItem(t, key), "nothing written")
		}
	})

	t.Run("SkewExtendsTheLease", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		key := b.key("EURUSD")
		running := b.itemIn(t, key, ledger.ItemRunning)
		skew := 5 * time.Second
		now := running.LeaseUntil.Add(skew - time.Millisecond)
		_, err := b.store.Claim(b.ctx, ledger.ClaimParams{Key: key, Owner: "b", LeaseUntil: now.Add(itemLease), Fence: 2, Skew: skew, Now: now})
		require.ErrorIs(t, err, ledger.ErrHeld, "live until LeaseUntil+Skew")

		now = running.LeaseUntil.Add(skew)
		it, err := b.store.Claim(b.ctx, ledger.ClaimParams{Key: key, Owner: "b", LeaseUntil: now.Add(itemLease), Fence: 2, Skew: skew, Now: now})
		require.NoError(t, err, "claimable once LeaseUntil+Skew <= Now")
		require.Equal(t, "b", it.Owner)
		require.Equal(t, 2, it.Attempt)
	})

	t.Run("BelowMaxAttemptsIsClaimed", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		key := b.key("EURUSD")
		b.itemIn(t, key, ledger.ItemFailed) // attempt 1
		now := at(3 * time.Second)
		it, err := b.store.Claim(b.ctx, ledger.ClaimParams{Key: key, Owner: "b", LeaseUntil: now.Add(itemLease), Fence: 1, MaxAttempts: 2, Now: now})
		require.NoError(t, err)
		require.Equal(t, 2, it.Attempt)
	})

	for _, from := range []ledger.ItemState{ledger.ItemFailed, ledger.ItemRunning} {
		t.Run("MaxAttemptsReachedGoesDeadFrom_"+string(from), func(t *testing.T) {
			t.Parallel()
			b := setup(t, h)
			key := b.key("EURUSD")
			before := b.itemIn(t, key, from) // attempt 1
			now := at(time.Hour)
			it, err := b.store.Claim(b.ctx, ledger.ClaimParams{Key: key, Owner: "b", LeaseUntil: now.Add(itemLease), Fence: 4, MaxAttempts: 1, Now: now})
			require.ErrorIs(t, err, ledger.ErrTerminal)
			want := before
			want.State, want.Error, want.FinishedAt, want.UpdatedAt = ledger.ItemDead, "attempts exhausted", now, now
			requireItem(t, want, it, "owner, attempt and fence stay those of the last claim")
			requireItem(t, want, b.getItem(t, key))
		})
	}

	for _, state := range terminalStates {
		t.Run("TerminalWhen_"+string(state), func(t *testing.T) {
			t.Parallel()
			b := setup(t, h)
			key := b.key("EURUSD")
			before := b.itemIn(t, key, state)
			now := at(time.Hour)
			it, err := b.store.Claim(b.ctx, ledger.ClaimParams{Key: key, Owner: "b", LeaseUntil: now.Add(itemLease), Fence: 2, Now: now})
			require.ErrorIs(t, err, ledger.ErrTerminal)
			requireItem(t, before, it, "the current record comes with ErrTerminal")
			requireItem(t, before, b.getItem(t, key), "nothing written")
		})
	}

	t.Run("GenerationsAreSeparate", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		b.itemIn(t, b.key("EURUSD"), ledger.ItemSucceeded)
		key2 := ledger.ItemKey{Run: b.runID(2), Asset: "EURUSD"}
		it := b.claim(t, key2, "b", at(time.Minute))
		require.Equal(t, 1, it.Attempt)
		require.Equal(t, key2, itemView(it).Key)
		require.Equal(t, ledger.ItemSucceeded, b.getItem(t, b.key("EURUSD")).State)
	})
}

// holderCall is one of the calls conditioned on RUNNING(Owner, Attempt):
// Complete, Fail and Release.
type holderCall struct {
	name     string
	callFunc func(b *bundle, key ledger.ItemKey, owner string, attempt int, now time.Time) (ledger.Item, error)
}

var holderCalls = []holderCall{
	{"Complete", func(b *bundle, key ledger.ItemKey, owner string, attempt int, now time.Time) (ledger.Item, error) {
		return b.store.Complete(b.ctx, ledger.CompleteParams{Key: key, Owner: owner, Attempt: attempt, Result: []byte(`{"close":1.0842}`), Now: now})
	}},
	{"Fail", func(b *bundle, key ledger.ItemKey, owner string, attempt int, now time.Time) (ledger.Item, error) {
		return b.store.Fail(b.ctx, ledger.FailParams{Key: key, Owner: owner, Attempt: attempt, Reason: "upstream 503", Now: now})
	}},
	{"Release", func(b *bundle, key ledger.ItemKey, owner string, attempt int, now time.Time) (ledger.Item, error) {
		return b.store.Release(b.ctx, ledger.ReleaseParams{Key: key, Owner: owner, Attempt: attempt, Now: now})
	}},
	{"Extend", func(b *bundle, key ledger.ItemKey, owner string, attempt int, now time.Time) (ledger.Item, error) {
		return b.store.Extend(b.ctx, ledger.ExtendParams{Key: key, Owner: owner, Attempt: attempt, LeaseUntil: now.Add(itemLease), Now: now})
	}},
}

// TestHolder covers what Complete, Fail, Release and Extend share: only the
// current owner and attempt of a RUNNING item may call them.
func TestHolder(t *testing.T, h Harness) {
	t.Parallel()
	for _, hc := range holderCalls {
		t.Run(hc.name, func(t *testing.T) {
			t.Parallel()

			t.Run("AcceptedPastLeaseUntil", func(t *testing.T) {
				t.Parallel()
				b := setup(t, h)
				key := b.key("EURUSD")
				running := b.itemIn(t, key, ledger.ItemRunning)
				_, err := hc.callFunc(b, key, "a", 1, running.LeaseUntil.Add(time.Hour))
				require.NoError(t, err, "no other claim happened")
			})

			conflicts := []struct {
				name    string
				state   ledger.ItemState
				owner   string
				attempt int
			}{
				{"OtherOwner", ledger.ItemRunning, "b", 1},
				{"OtherAttempt", ledger.ItemRunning, "a", 2},
				{"PreviousAttempt", ledger.ItemRunning, "a", 0},
				{"NotRunning", ledger.ItemFailed, "a", 1},
			}
			for _, c := range conflicts {
				t.Run("ConflictWhen_"+c.name, func(t *testing.T) {
					t.Parallel()
					b := setup(t, h)
					key := b.key("EURUSD")
					before := b.itemIn(t, key, c.state)
					it, err := hc.callFunc(b, key, c.owner, c.attempt, at(3*time.Second))
					require.ErrorIs(t, err, ledger.ErrConflict)
					requireItem(t, before, it, "the current record comes with ErrConflict")
					requireItem(t, before, b.getItem(t, key), "nothing written")
				})
			}

			for _, state := range terminalStates {
				t.Run("TerminalWhen_"+string(state), func(t *testing.T) {
					t.Parallel()
					b := setup(t, h)
					key := b.key("EURUSD")
					before := b.itemIn(t, key, state)
					it, err := hc.callFunc(b, key, "a", 1, at(3*time.Second))
					require.ErrorIs(t, err, ledger.ErrTerminal)
					requireItem(t, before, it, "the current record comes with ErrTerminal")
					requireItem(t, before, b.getItem(t, key), "nothing written")
				})
			}

			t.Run("NotFound", func(t *testing.T) {
				t.Parallel()
				b := setup(t, h)
				key := b.key("EURUSD")
				_, err := hc.callFunc(b, key, "a", 1, at(time.Second))
				require.ErrorIs(t, err, ledger.ErrNotFound)
				_, err = b.store.GetItem(b.ctx, key)
				require.ErrorIs(t, err, ledger.ErrNotFound, "nothing written")
			})

			t.Run("StaleOwnerRejectedAfterTakeover", func(t *testing.T) {
				t.Parallel()
				b := setup(t, h)
				key := b.key("EURUSD")
				first := b.itemIn(t, key, ledger.ItemRunning)
				second := b.claim(t, key, "b", first.LeaseUntil.Add(time.Second))
				require.Equal(t, 2, second.Attempt)

				it, err := hc.callFunc(b, key, "a", 1, second.StartedAt.Add(time.Second))
				require.ErrorIs(t, err, ledger.ErrConflict, "the stale owner's late call")
				requireItem(t, second, it)
				requireItem(t, second, b.getItem(t, key), "nothing written")

				_, err = hc.callFunc(b, key, "b", 2, second.StartedAt.Add(2*time.Second))
				require.NoError(t, err, "the current owner's call")
			})

			t.Run("SameOwnerOlderAttemptRejected", func(t *testing.T) {
				t.Parallel()
				b := setup(t, h)
				key := b.key("EURUSD")
				first := b.itemIn(t, key, ledger.ItemRunning)
				second := b.claim(t, key, "a", first.LeaseUntil) // the same consumer took it over
				_, err := hc.callFunc(b, key, "a", 1, second.StartedAt.Add(time.Second))
				require.ErrorIs(t, err, ledger.ErrConflict)
				requireItem(t, second, b.getItem(t, key), "nothing written")
			})
		})
	}
}

// TestComplete: the holder's Complete makes the item SUCCEEDED with its
// result.
func TestComplete(t *testing.T, h Harness) {
	t.Parallel()
	t.Run("SucceedsWithResult", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		key := b.key("EURUSD")
		running := b.itemIn(t, key, ledger.ItemRunning)
		now := at(2500 * time.Millisecond)
		result := []byte{0x7b, 0x00, 0xff, 0x7d} // arbitrary bytes survive
		it, err := b.store.Complete(b.ctx, ledger.CompleteParams{Key: key, Owner: "a", Attempt: 1, Result: result, Now: now})
		require.NoError(t, err)
		want := running
		want.State, want.Result, want.FinishedAt, want.UpdatedAt = ledger.ItemSucceeded, result, now, now
		requireItem(t, want, it)
		requireItem(t, want, b.getItem(t, key))
	})
}

// TestFail: the holder's Fail makes the item FAILED, or DEAD when it is
// permanent or out of attempts.
func TestFail(t *testing.T, h Harness) {
	t.Parallel()
	cases := []struct {
		name        string
		attempt     int // attempt of the failing claim
		permanent   bool
		maxAttempts int
		want        ledger.ItemState
	}{
		{"Retryable", 1, false, 0, ledger.ItemFailed},
		{"BelowMaxAttempts", 1, false, 2, ledger.ItemFailed},
		{"AtMaxAttempts", 2, false, 2, ledger.ItemDead},
		{"PastMaxAttempts", 2, false, 1, ledger.ItemDead},
		{"Permanent", 1, true, 0, ledger.ItemDead},
		{"PermanentBelowMaxAttempts", 1, true, 5, ledger.ItemDead},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, h)
			key := b.key("EURUSD")
			running := b.itemIn(t, key, ledger.ItemRunning)
			if c.attempt == 2 {
				running = b.claim(t, key, "a", running.LeaseUntil)
			}
			now := running.StartedAt.Add(500 * time.Millisecond)
			it, err := b.store.Fail(b.ctx, ledger.FailParams{
				Key: key, Owner: "a", Attempt: c.attempt, Reason: "upstream 503: try later",
				Permanent: c.permanent, MaxAttempts: c.maxAttempts, Now: now,
			})
			require.NoError(t, err)
			want := running
			want.State, want.Error, want.UpdatedAt = c.want, "upstream 503: try later", now
			if c.want.Terminal() {
				want.FinishedAt = now
			}
			requireItem(t, want, it)
			requireItem(t, want, b.getItem(t, key))
		})
	}
}

// TestRelease: the holder's Release makes the item claimable at once.
func TestRelease(t *testing.T, h Harness) {
	t.Parallel()
	t.Run("AnyOwnerMayClaimAtOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		key := b.key("EURUSD")
		running := b.itemIn(t, key, ledger.ItemRunning)
		now := at(5 * time.Second)
		it, err := b.store.Release(b.ctx, ledger.ReleaseParams{Key: key, Owner: "a", Attempt: 1, Now: now})
		require.NoError(t, err)
		want := running
		want.LeaseUntil, want.UpdatedAt = now, now
		requireItem(t, want, it, "still RUNNING, without a verdict")
		requireItem(t, want, b.getItem(t, key))
		require.Equal(t, now, b.getItem(t, key).LeaseUntil.UTC())

		next := b.claim(t, key, "b", now)
		require.Equal(t, 2, next.Attempt, "the next claim counts as an attempt")
		require.Equal(t, "b", next.Owner)
	})
}

// TestExtend: the holder's Extend moves the claim's expiry, so that no
// other owner takes the item over before it; a stale attempt's heartbeat
// is refused and changes nothing; a cancelled item refuses it with
// ErrTerminal (the holder's cue to stop).
func TestExtend(t *testing.T, h Harness) {
	t.Parallel()
	t.Run("HoldsOffTakeOver", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		key := b.key("EURUSD")
		running := b.itemIn(t, key, ledger.ItemRunning)
		now := running.LeaseUntil.Add(-time.Second)
		until := running.LeaseUntil.Add(time.Minute)
		it, err := b.store.Extend(b.ctx, ledger.ExtendParams{Key: key, Owner: "a", Attempt: 1, LeaseUntil: until, Now: now})
		require.NoError(t, err)
		want := running
		want.LeaseUntil, want.UpdatedAt = until, now
		requireItem(t, want, it, "still RUNNING under the same claim, with the new expiry")
		requireItem(t, want, b.getItem(t, key))

		// Past the old expiry, the claim holds.
		_, err = b.store.Claim(b.ctx, ledger.ClaimParams{Key: key, Owner: "b", LeaseUntil: until.Add(time.Minute), Now: running.LeaseUntil.Add(time.Second)})
		require.ErrorIs(t, err, ledger.ErrHeld)
		// Past the new one, another owner takes it over, and the first
		// holder's heartbeat is refused from then on.
		next := b.claim(t, key, "b", until)
		require.Equal(t, 2, next.Attempt)
		it, err = b.store.Extend(b.ctx, ledger.ExtendParams{Key: key, Owner: "a", Attempt: 1, LeaseUntil: until.Add(time.Hour), Now: until})
		require.ErrorIs(t, err, ledger.ErrConflict, "a stale attempt's heartbeat")
		requireItem(t, next, it, "the current record comes with ErrConflict")
		requireItem(t, next, b.getItem(t, key), "nothing written")
	})
	t.Run("RefusedOnceCancelled", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		key := b.key("EURUSD")
		b.itemIn(t, key, ledger.ItemRunning)
		cancelled, err := b.store.Cancel(b.ctx, ledger.CancelParams{Key: key, Reason: "operator", Now: at(2 * time.Second)})
		require.NoError(t, err)
		it, err := b.store.Extend(b.ctx, ledger.ExtendParams{Key: key, Owner: "a", Attempt: 1, LeaseUntil: at(time.Hour), Now: at(3 * time.Second)})
		require.ErrorIs(t, err, ledger.ErrTerminal)
		require.Equal(t, ledger.ItemCancelled, it.State)
		require.Equal(t, "operator", it.Error, "the holder learns why")
		requireItem(t, cancelled, b.getItem(t, key), "nothing written")
	})
	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		_, err := b.store.Extend(b.ctx, ledger.ExtendParams{Key: b.key("EURUSD"), Owner: "a", Attempt: 1, LeaseUntil: at(time.Hour), Now: at(time.Second)})
		require.ErrorIs(t, err, ledger.ErrNotFound)
	})
}

// TestCancel: Cancel ends an absent or unfinished item, never a
// terminal one.
func TestCancel(t *testing.T, h Harness) {
	t.Parallel()
	t.Run("Absent", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		key := b.key("EURUSD")
		now := at(time.Second)
		it, err := b.store.Cancel(b.ctx, ledger.CancelParams{Key: key, Reason: "asset delisted", Now: now})
		require.NoError(t, err)
		want := ledger.Item{Key: key, State: ledger.ItemCancelled, Error: "asset delisted", CreatedAt: now, FinishedAt: now, UpdatedAt: now}
		requireItem(t, want, it)
		requireItem(t, want, b.getItem(t, key))

		_, err = b.store.Claim(b.ctx, ledger.ClaimParams{Key: key, Owner: "a", LeaseUntil: now.Add(itemLease), Now: now.Add(time.Second)})
		require.ErrorIs(t, err, ledger.ErrTerminal, "a cancelled item is never claimed")
	})

	for _, state := range []ledger.ItemState{ledger.ItemRunning, ledger.ItemFailed} {
		t.Run("From_"+string(state), func(t *testing.T) {
			t.Parallel()
			b := setup(t, h)
			key := b.key("EURUSD")
			before := b.itemIn(t, key, state)
			now := at(3 * time.Second)
			it, err := b.store.Cancel(b.ctx, ledger.CancelParams{Key: key, Reason: "operator", Now: now})
			require.NoError(t, err)
			want := before
			want.State, want.Error, want.FinishedAt, want.UpdatedAt = ledger.ItemCancelled, "operator", now, now
			requireItem(t, want, it)
			requireItem(t, want, b.getItem(t, key))
		})
	}

	for _, state := range terminalStates {
		t.Run("TerminalWhen_"+string(state), func(t *testing.T) {
			t.Parallel()
			b := setup(t, h)
			key := b.key("EURUSD")
			before := b.itemIn(t, key, state)
			it, err := b.store.Cancel(b.ctx, ledger.CancelParams{Key: key, Reason: "operator", Now: at(time.Hour)})
			require.ErrorIs(t, err, ledger.ErrTerminal)
			requireItem(t, before, it, "the current record comes with ErrTerminal")
			requireItem(t, before, b.getItem(t, key), "nothing written")
		})
	}
}

// TestTerminalIsTerminal tries every writing method, with the parameters
// most likely to succeed, on every kind of terminal record (invariant 5).
func TestTerminalIsTerminal(t *testing.T, h Harness) {
	t.Parallel()
	makers := []struct {
		name     string
		makeFunc func(t *testing.T, b *bundle, key ledger.ItemKey) ledger.Item
	}{
		{"Succeeded", func(t *testing.T, b *bundle, key ledger.ItemKey) ledger.Item {
			return b.itemIn(t, key, ledger.ItemSucceeded)
		}},
		{"DeadByFail", func(t *testing.T, b *bundle, key ledger.ItemKey) ledger.Item {
			return b.itemIn(t, key, ledger.ItemDead)
		}},
		{"DeadByExhaustedClaim", func(t *testing.T, b *bundle, key ledger.ItemKey) ledger.Item {
			b.itemIn(t, key, ledger.ItemFailed)
			it, err := b.store.Claim(b.ctx, ledger.ClaimParams{Key: key, Owner: "a", LeaseUntil: at(time.Hour), MaxAttempts: 1, Now: at(3 * time.Second)})
			require.ErrorIs(t, err, ledger.ErrTerminal)
			return it
		}},
		{"CancelledRunning", func(t *testing.T, b *bundle, key ledger.ItemKey) ledger.Item {
			return b.itemIn(t, key, ledger.ItemCancelled)
		}},
		{"CancelledAbsent", func(t *testing.T, b *bundle, key ledger.ItemKey) ledger.Item {
			it, err := b.store.Cancel(b.ctx, ledger.CancelParams{Key: key, Reason: "stop", Now: at(time.Second)})
			require.NoError(t, err)
			return it
		}},
	}
	for _, m := range makers {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, h)
			key := b.key("EURUSD")
			before := m.makeFunc(t, b, key)
			require.True(t, before.State.Terminal())
			owner, attempt := before.Owner, before.Attempt
			now := at(24 * time.Hour)

			writes := map[string]func() (ledger.Item, error){
				"Claim": func() (ledger.Item, error) {
					return b.store.Claim(b.ctx, ledger.ClaimParams{Key: key, Owner: "z", LeaseUntil: now.Add(itemLease), Fence: 99, Now: now})
				},
				"ClaimBySameOwner": func() (ledger.Item, error) {
					return b.store.Claim(b.ctx, ledger.ClaimParams{Key: key, Owner: owner, LeaseUntil: now.Add(itemLease), Fence: 99, Now: now})
				},
				"ClaimExhausted": func() (ledger.Item, error) {
					return b.store.Claim(b.ctx, ledger.ClaimParams{Key: key, Owner: "z", LeaseUntil: now.Add(itemLease), MaxAttempts: 1, Now: now})
				},
				"Complete": func() (ledger.Item, error) {
					return b.store.Complete(b.ctx, ledger.CompleteParams{Key: key, Owner: owner, Attempt: attempt, Result: []byte("again"), Now: now})
				},
				"Fail": func() (ledger.Item, error) {
					return b.store.Fail(b.ctx, ledger.FailParams{Key: key, Owner: owner, Attempt: attempt, Reason: "again", Now: now})
				},
				"FailPermanent": func() (ledger.Item, error) {
					return b.store.Fail(b.ctx, ledger.FailParams{Key: key, Owner: owner, Attempt: attempt, Reason: "again", Permanent: true, Now: now})
				},
				"Release": func() (ledger.Item, error) {
					return b.store.Release(b.ctx, ledger.ReleaseParams{Key: key, Owner: owner, Attempt: attempt, Now: now})
				},
				"Extend": func() (ledger.Item, error) {
					return b.store.Extend(b.ctx, ledger.ExtendParams{Key: key, Owner: owner, Attempt: attempt, LeaseUntil: now.Add(itemLease), Now: now})
				},
				"Cancel": func() (ledger.Item, error) {
					return b.store.Cancel(b.ctx, ledger.CancelParams{Key: key, Reason: "again", Now: now})
				},
			}
			for name, write := range writes {
				it, err := write()
				require.ErrorIs(t, err, ledger.ErrTerminal, name)
				requireItem(t, before, it, "%s returns the terminal record", name)
				requireItem(t, before, b.getItem(t, key), "%s wrote nothing", name)
			}
		})
	}
}

// TestGetItem: GetItem returns the stored record, or ErrNotFound.
func TestGetItem(t *testing.T, h Harness) {
	t.Parallel()
	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		_, err := b.store.GetItem(b.ctx, b.key("EURUSD"))
		require.ErrorIs(t, err, ledger.ErrNotFound)
		b.claim(t, b.key("EURUSD"), "a", at(time.Second))
		_, err = b.store.GetItem(b.ctx, b.key("GBPUSD"))
		require.ErrorIs(t, err, ledger.ErrNotFound, "other asset")
		_, err = b.store.GetItem(b.ctx, ledger.ItemKey{Run: b.runID(2), Asset: "EURUSD"})
		require.ErrorIs(t, err, ledger.ErrNotFound, "other generation")
	})
}

// TestListItems: ListItems returns one generation's items, ordered by
// asset.
func TestListItems(t *testing.T, h Harness) {
	t.Parallel()
	t.Run("OrderedByAssetOneGenerationOnly", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		for _, asset := range []string{"USDJPY", "EURUSD", "USDCHF", "DXY", "GBPUSD"} {
			b.claim(t, b.key(asset), "a", at(time.Second))
		}
		b.itemIn(t, ledger.ItemKey{Run: b.runID(2), Asset: "AUDUSD"}, ledger.ItemSucceeded)
		b.claim(t, ledger.ItemKey{Run: b.runID(2), Asset: "EURUSD"}, "b", at(time.Minute))
		other := ledger.RunID{Job: uniqueJob(), Nominal: nominal, Generation: 1}
		b.claim(t, ledger.ItemKey{Run: other, Asset: "AAA"}, "a", at(time.Second))
		b.claim(t, ledger.ItemKey{Run: ledger.RunID{Job: b.job, Nominal: nominal.Add(time.Minute), Generation: 1}, Asset: "AAA"}, "a", at(time.Second))

		items, err := b.store.ListItems(b.ctx, b.runID(1))
		require.NoError(t, err)
		var assets []string
		for _, it := range items {
			assets = append(assets, it.Key.Asset)
			requireItem(t, b.getItem(t, it.Key), it, "listed records are the stored ones")
			require.Equal(t, b.runID(1), itemView(it).Key.Run)
		}
		require.Equal(t, []string{"DXY", "EURUSD", "GBPUSD", "USDCHF", "USDJPY"}, assets)

		items, err = b.store.ListItems(b.ctx, b.runID(2))
		require.NoError(t, err)
		require.Len(t, items, 2)
		require.Equal(t, "AUDUSD", items[0].Key.Asset)
		require.Equal(t, ledger.ItemSucceeded, items[0].State)
		require.Equal(t, []byte("ok"), items[0].Result)
		require.Equal(t, "EURUSD", items[1].Key.Asset)
	})

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		items, err := b.store.ListItems(b.ctx, b.runID(1))
		require.NoError(t, err)
		require.Empty(t, items)
	})
}
