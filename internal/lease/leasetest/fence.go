package leasetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFenceStrictlyIncreases: across acquisitions, releases, re-entrant
// acquisitions, takeovers and renewals, every acquisition's fence is
// greater than every fence minted before it; renewals keep the fence,
// releases keep it in the record, and failed acquisitions change nothing.
func TestFenceStrictlyIncreases(t *testing.T, h Harness) {
	t.Parallel()
	f := setup(t, h)
	const ttl = 10 * time.Second
	var minted []int64
	mint := func(fence int64) {
		t.Helper()
		if n := len(minted); n > 0 {
			require.Greater(t, fence, minted[n-1], "fence after %v", minted)
		}
		minted = append(minted, fence)
	}

	a := f.acquire("a", ttl, at(0), 0) // absent → held
	mint(a.Fence)
	require.NoError(t, f.release("a", a.Fence)) // held → free
	requireFreeRecord(t, f.inspect(), f.job, a.Fence)

	b := f.acquire("b", ttl, at(1*time.Second), 0) // free → held
	mint(b.Fence)
	b = f.acquire("b", ttl, at(2*time.Second), 0) // re-entrant
	mint(b.Fence)

	requireSame(t, b, f.acquireHeld("c", ttl, at(3*time.Second), 0)) // failed: no change
	requireSame(t, b, f.inspect())

	c := f.acquire("c", ttl, b.ExpiresAt, 0) // expired → taken over
	mint(c.Fence)
	renewed, err := f.renew("c", c.Fence, ttl, c.ExpiresAt.Add(-time.Second))
	require.NoError(t, err)
	require.Equal(t, c.Fence, renewed.Fence, "renewal keeps the fence")
	require.NoError(t, f.release("c", c.Fence))
	requireFreeRecord(t, f.inspect(), f.job, c.Fence)

	a = f.acquire("a", ttl, renewed.ExpiresAt.Add(-time.Second), 0) // free again
	mint(a.Fence)
	a = f.acquire("a", ttl, a.ExpiresAt.Add(time.Hour), 0) // own expired lease
	mint(a.Fence)
	require.Len(t, minted, 6)
}
