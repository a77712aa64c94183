package cli

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/batonlock"
)

// baton lock list|show|release with the guards and exit statuses of
// baton lease: a live holder is refused without --force-live and its
// confirmation, a wrong owner or fence changes nothing, an expired holder
// is released, and escalation shows in the text and the JSON.
func TestLockCommands(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "baton.db")
	ctx := t.Context()
	app, err := batonlock.Open(ctx, &batonlock.Options{Store: store, Holder: "trader", TTL: time.Hour, Heartbeat: -1})
	require.NoError(t, err)
	defer app.Close()
	key := "entry/alpha/EURUSD"
	held, err := app.TryAcquire(ctx, key)
	require.NoError(t, err)
	fence := strconv.FormatInt(held.Fence(), 10)
	main := func(args ...string) (int, string, string) {
		return runMain(t, append(args, "--store", store)...)
	}

	code, out, errOut := main("lock", "show", key)
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, key+`: held by "trader" (owner `+held.Owner()+"), fence "+fence)
	require.Contains(t, out, "--owner '"+held.Owner()+"' --fence "+fence)

	code, out, errOut = main("lock", "list", "--json")
	require.Equal(t, ExitOK, code, errOut)
	var list struct{ Locks []lockJSON }
	require.NoError(t, json.Unmarshal([]byte(out), &list), out)
	require.Len(t, list.Locks, 1)
	require.Equal(t, "held", list.Locks[0].State)
	require.False(t, list.Locks[0].Escalated)

	code, _, errOut = main("lock", "release", key, "--owner", held.Owner(), "--fence", fence)
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, "refused:")
	require.Contains(t, errOut, "--force-live")
	code, _, errOut = main("lock", "release", key, "--owner", held.Owner(), "--fence", fence, "--force-live")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "--yes-i-know-the-owner-is-alive")
	code, _, errOut = main("lock", "release", key, "--owner", "someone", "--fence", fence, "--force-live", "--yes-i-know-the-owner-is-alive")
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, "changed hands")
	require.NoError(t, held.Renew(ctx), "nothing was released")

	for _, bad := range [][]string{
		{"lock", "show"}, {"lock", "show", ""}, {"lock", "release", key}, {"lock", "release", key, "--owner", "x"},
		{"lock", "release", key, "--owner", "x", "--fence", "1", "--yes-i-know-the-owner-is-alive"},
	} {
		code, _, errOut := main(bad...)
		require.Equal(t, ExitUsage, code, "%v: %s", bad, errOut)
	}
	code, _, _ = main("lock", "show", "never")
	require.Equal(t, ExitFailure, code)

	code, out, errOut = main("lock", "release", key, "--owner", held.Owner(), "--fence", fence, "--force-live", "--yes-i-know-the-owner-is-alive", "--reason", "test")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "released the LIVE lock "+key)
	require.Contains(t, errOut, "lock force-released", "the forced release is logged")
	require.ErrorIs(t, held.Renew(ctx), batonlock.ErrLost)
	code, out, _ = main("lock", "release", key, "--owner", held.Owner(), "--fence", fence)
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "already free")

	// An expired holder is released without --force-live.
	c := time.Now()
	short, err := batonlock.Open(ctx, &batonlock.Options{Store: store, Holder: "dead", TTL: time.Millisecond, Heartbeat: -1, NowFunc: func() time.Time { return c.Add(-time.Hour) }})
	require.NoError(t, err)
	defer short.Close()
	dead, err := short.TryAcquire(ctx, key)
	require.NoError(t, err)
	code, out, errOut = main("lock", "release", key, "--owner", dead.Owner(), "--fence", strconv.FormatInt(dead.Fence(), 10))
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "released the expired lock")

	// Escalation: refused by one holder for three TTL cycles, just now.
	now := time.Now()
	var clock atomic.Int64
	clock.Store(now.Add(-3 * time.Second).UnixNano())
	stuckL, err := batonlock.Open(ctx, &batonlock.Options{Store: store, Holder: "stuck", TTL: time.Second, Heartbeat: -1, NowFunc: func() time.Time { return time.Unix(0, clock.Load()) }})
	require.NoError(t, err)
	defer stuckL.Close()
	stuck, err := stuckL.TryAcquire(ctx, key)
	require.NoError(t, err)
	for i := 0; i <= 6; i++ {
		clock.Store(now.Add(time.Duration(i-6) * time.Second / 2).UnixNano())
		require.NoError(t, stuck.Renew(ctx))
		_, err := stuckL.TryAcquire(ctx, key)
		require.ErrorIs(t, err, batonlock.ErrHeld)
	}
	code, out, errOut = main("lock", "show", key)
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "ESCALATED")
	code, out, errOut = main("lock", "show", key, "--json")
	require.Equal(t, ExitOK, code, errOut)
	var one lockJSON
	require.NoError(t, json.Unmarshal([]byte(out), &one), out)
	require.True(t, one.Escalated)
	require.EqualValues(t, 7, one.Contention)
}
