package batonlock

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The ENTRY scenario on every engine: three instances of a trading loop
// contend for one lock per profile and symbol; each holds its lock across
// a few fenced writes. At most one instance holds a key at a time, every
// write's fence is at least the key's previous one, and every instance
// gets its turn.
func TestEntryScenario(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, open func(Options) *Locker) {
		ctx := t.Context()
		keys := []string{"entry/alpha/EURUSD/" + t.Name(), "entry/alpha/USDJPY/" + t.Name()}
		var (
			mu     sync.Mutex
			active = map[string]string{}
			fences = map[string]int64{}
			turns  = map[string]int{}
		)
		var wg sync.WaitGroup
		for i := range 3 {
			l := open(Options{TTL: 5 * time.Second, Skew: time.Second, Holder: fmt.Sprintf("entry-%d", i)})
			wg.Go(func() {
				for round := range 3 {
					for _, key := range keys {
						k, err := l.Acquire(ctx, key)
						if !assertNoError(t, err, "instance %d round %d", i, round) {
							return
						}
						mu.Lock()
						if other := active[key]; other != "" {
							t.Errorf("%s held by %s and %s at once", key, other, k.Owner())
						}
						active[key] = k.Owner()
						mu.Unlock()
						for range 3 {
							require.NoError(t, k.Context().Err())
							mu.Lock()
							if k.Fence() < fences[key] {
								t.Errorf("%s: write with fence %d after fence %d", key, k.Fence(), fences[key])
							}
							fences[key] = k.Fence()
							mu.Unlock()
						}
						mu.Lock()
						active[key] = ""
						turns[l.holder]++
						mu.Unlock()
						assertNoError(t, k.Release(ctx), "release")
					}
				}
			})
		}
		wg.Wait()
		require.Len(t, turns, 3)
		for h, n := range turns {
			require.Equal(t, 6, n, "turns of %s", h)
		}
		for _, key := range keys {
			info, err := open(Options{TTL: time.Second}).Inspect(ctx, key)
			require.NoError(t, err)
			require.EqualValues(t, 9, info.Fence, "nine acquisitions of %s", key)
			require.False(t, info.Held)
		}
	})
}

func assertNoError(t *testing.T, err error, msg string, args ...any) bool {
	t.Helper()
	if err != nil {
		t.Errorf(msg+": %v", append(args, err)...)
		return false
	}
	return true
}
