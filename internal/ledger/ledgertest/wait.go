package ledgertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
)

// waitNoter returns b's store as a ledger.WaitNoter, which every store
// of baton is: status shows the next attempt of items on every engine.
func (b *bundle) waitNoter(t *testing.T) ledger.WaitNoter {
	t.Helper()
	w, ok := b.store.(ledger.WaitNoter)
	require.True(t, ok, "%T must implement ledger.WaitNoter", b.store)
	return w
}

// TestNoteWait: NoteWait stores a wait on a FAILED item at the caller's
// attempt (a retry delay) or, unclaimed, on any FAILED or absent item (a
// limit wait: absent becomes FAILED at attempt 0, whose first claim is
// attempt 1); it refuses RUNNING, terminal, another attempt's and (not
// unclaimed) absent items, writing nothing; NextAttempt shows a wait
// only while the item is FAILED at the attempt it was noted at.
func TestNoteWait(t *testing.T, h Harness) {
	t.Parallel()
	limitWait := ledger.ItemWait{At: at(time.Minute), Limit: "per-tenant", Key: "tenant/日本#1 x"}
	t.Run("AbsentUnclaimedIsRecordedAtAttempt0", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		key := b.key("EURUSD")
		now := at(1250 * time.Millisecond)
		it, err := b.waitNoter(t).NoteWait(b.ctx, ledger.NoteWaitParams{Key: key, Wait: limitWait, Unclaimed: true, Now: now})
		require.NoError(t, err)
		want := ledger.Item{Key: key, State: ledger.ItemFailed, CreatedAt: now, UpdatedAt: now, Wait: limitWait}
		requireItem(t, want, it)
		requireItem(t, want, b.getItem(t, key))
		w, ok := b.getItem(t, key).NextAttempt()
		require.True(t, ok)
		require.Equal(t, limitWait.Limit, w.Limit)
		require.Equal(t, limitWait.Key, w.Key)
		require.True(t, limitWait.At.Equal(w.At))

		claimed := b.claim(t, key, "a", at(2*time.Minute))
		require.Equal(t, 1, claimed.Attempt, "the first claim is attempt 1")
		require.Equal(t, ledger.ItemRunning, claimed.State)
		_, ok = claimed.NextAttempt()
		require.False(t, ok, "a running item waits on nothing")
	})
	t.Run("FailedAtTheAttempt", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		key := b.key("EURUSD")
		failed := b.itemIn(t, key, ledger.ItemFailed)
		now := at(3 * time.Second)
		delay := ledger.ItemWait{At: at(33 * time.Second)}
		it, err := b.waitNoter(t).NoteWait(b.ctx, ledger.NoteWaitParams{Key: key, Wait: delay, Attempt: 1, Now: now})
		require.NoError(t, err)
		want := failed
		want.UpdatedAt, want.Wait = now, ledger.ItemWait{At: delay.At, Attempt: 1}
		requireItem(t, want, it)
		requireItem(t, want, b.getItem(t, key))
		w, ok := it.NextAttempt()
		require.True(t, ok)
		require.Equal(t, "boom", it.Error, "the last error is kept")
		require.Empty(t, w.Limit)

		// A limit wait on the same FAILED record, unclaimed: any attempt.
		it, err = b.waitNoter(t).NoteWait(b.ctx, ledger.NoteWaitParams{Key: key, Wait: limitWait, Unclaimed: true, Now: now})
		require.NoError(t, err)
		require.Equal(t, 1, it.Wait.Attempt)
		require.Equal(t, limitWait.Key, it.Wait.Key)

		// Another attempt's claim and failure: the wait no longer shows.
		b.claim(t, key, "b", at(time.Hour))
		it, err = b.store.Fail(b.ctx, ledger.FailParams{Key: key, Owner: "b", Attempt: 2, Reason: "again", Now: at(time.Hour + time.Second)})
		require.NoError(t, err)
		_, ok = it.NextAttempt()
		require.False(t, ok, "noted at attempt 1, the item is at attempt 2")
	})
	t.Run("Refused", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		cases := []struct {
			name      string
			state     ledger.ItemState // "" absent
			attempt   int
			unclaimed bool
			want      error
		}{
			{"AbsentClaimed", "", 1, false, ledger.ErrNotFound},
			{"OtherAttempt", ledger.ItemFailed, 2, false, ledger.ErrConflict},
			{"Running", ledger.ItemRunning, 1, false, ledger.ErrConflict},
			{"RunningUnclaimed", ledger.ItemRunning, 0, true, ledger.ErrConflict},
			{"Succeeded", ledger.ItemSucceeded, 1, true, ledger.ErrTerminal},
			{"Dead", ledger.ItemDead, 1, false, ledger.ErrTerminal},
			{"Cancelled", ledger.ItemCancelled, 0, true, ledger.ErrTerminal},
		}
		for _, c := range cases {
			key := b.key(c.name)
			var before ledger.Item
			if c.state != "" {
				before = b.itemIn(t, key, c.state)
			}
			_, err := b.waitNoter(t).NoteWait(b.ctx, ledger.NoteWaitParams{Key: key, Wait: limitWait, Attempt: c.attempt, Unclaimed: c.unclaimed, Now: at(time.Minute)})
			require.ErrorIs(t, err, c.want, c.name)
			if c.state == "" {
				_, err := b.store.GetItem(b.ctx, key)
				require.ErrorIs(t, err, ledger.ErrNotFound, "%s: nothing written", c.name)
				continue
			}
			requireItem(t, before, b.getItem(t, key), "%s: nothing written", c.name)
		}
	})
}
