package ledgertest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
)

// contenders is how many goroutines race in the concurrent cases.
const contenders = 10

// race runs call(i) for i in [0, contenders) at once and returns their
// results by i.
func race[T any](call func(i int) (T, error)) ([]T, []error) {
	vals := make([]T, contenders)
	errs := make([]error, contenders)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range contenders {
		wg.Go(func() {
			<-start
			vals[i], errs[i] = call(i)
		})
	}
	close(start)
	wg.Wait()
	return vals, errs
}

// TestConcurrent races callers on one record: concurrent triggers of one
// tick open one run (invariant 2), and one of the owners racing to claim
// an item wins.
func TestConcurrent(t *testing.T, h Harness) {
	t.Parallel()
	// Invariant 2: any number of concurrent triggers for one tick open
	// exactly one run of generation 1.
	t.Run("OpenRunOpensOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		type opened struct {
			run ledger.Run
			out ledger.OpenOutcome
		}
		vals, errs := race(func(i int) (opened, error) {
			r, out, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{
				Job: b.job, Nominal: nominal, Fence: int64(i + 1), Now: at(time.Duration(i) * time.Millisecond),
			})
			return opened{r, out}, err
		})
		var nOpened int
		var maxFence int64
		for i, v := range vals {
			if errs[i] != nil {
				// A trigger whose fence is below the one stored by then.
				require.ErrorIs(t, errs[i], ledger.ErrConflict, "trigger %d", i)
				continue
			}
			maxFence = max(maxFence, int64(i+1))
			switch v.out {
			case ledger.Opened:
				nOpened++
			case ledger.Resumed:
			default:
				t.Fatalf("trigger %d: outcome %q", i, v.out)
			}
			require.Equal(t, b.runID(1), runView(v.run).ID, "trigger %d", i)
		}
		require.Equal(t, 1, nOpened, "exactly one Opened")
		r := b.getRun(t)
		require.Equal(t, b.runID(1), runView(r).ID)
		require.Equal(t, ledger.RunFanningOut, r.State)
		require.Equal(t, maxFence, r.Fence, "the highest fence that succeeded is stored")

		again, out, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: maxFence, Now: at(time.Second)})
		require.NoError(t, err)
		require.Equal(t, ledger.Resumed, out, "a repeated trigger resumes")
		require.Equal(t, 1, again.ID.Generation)
	})

	t.Run("OpenRunOpensOnceWithOneFence", func(t *testing.T) {
		t.Parallel()
		b := setup(t, h)
		outs, errs := race(func(int) (ledger.OpenOutcome, error) {
			_, out, err := b.store.OpenRun(b.ctx, ledger.OpenRunParams{Job: b.job, Nominal: nominal, Fence: 4, Now: at(time.Second)})
			return out, err
		})
		var nOpened, nResumed int
		for i, out := range outs {
			require.NoError(t, errs[i], "trigger %d", i)
			switch out {
			case ledger.Opened:
				nOpened++
			case ledger.Resumed:
				nResumed++
			}
		}
		require.Equal(t, 1, nOpened)
		require.Equal(t, contenders-1, nResumed)
	})

	// One claim wins among owners racing for a new item, and among owners
	// racing to take over an expired one.
	for _, expired := range []bool{false, true} {
		name := "ClaimOneWinnerOfNew"
		if expired {
			name = "ClaimOneWinnerOfExpired"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, h)
			key := b.key("EURUSD")
			now, wantAttempt := at(time.Second), 1
			if expired {
				first := b.itemIn(t, key, ledger.ItemRunning)
				now, wantAttempt = first.LeaseUntil.Add(time.Second), 2
			}
			items, errs := race(func(i int) (ledger.Item, error) {
				return b.store.Claim(b.ctx, ledger.ClaimParams{
					Key: key, Owner: fmt.Sprintf("owner-%d", i), LeaseUntil: now.Add(itemLease), Fence: 1, Now: now,
				})
			})
			winner := -1
			for i, err := range errs {
				if err == nil {
					require.Equal(t, -1, winner, "owners %d and %d both won", winner, i)
					winner = i
					continue
				}
				require.True(t, errors.Is(err, ledger.ErrHeld), "owner %d: %v", i, err)
			}
			require.NotEqual(t, -1, winner, "nobody won")
			won := items[winner]
			require.Equal(t, fmt.Sprintf("owner-%d", winner), won.Owner)
			require.Equal(t, wantAttempt, won.Attempt)
			for i, it := range items {
				if i != winner {
					requireItem(t, won, it, "loser %d sees the winner's record", i)
				}
			}
			requireItem(t, won, b.getItem(t, key))
		})
	}
}
