package ui_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/lease"
)

// TestLeasePageLocks shows the application locks on the lease page: each
// lock's key, holder, owner token, fence and refusals, an escalated key
// (refused by one holder for three TTL cycles, refusals still going on)
// first and marked so, the others not.
func TestLeasePageLocks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "baton.db")
	b, err := sqlitebackend.Open(ctx, path)
	require.NoError(t, err)
	defer b.Close()
	now := time.Now()
	hot, err := b.Locks.Acquire(ctx, lease.AcquireParams{Job: "entry/alpha/EURUSD", Owner: "trader-a#00c0ffee", TTL: time.Hour, Now: now.Add(-5 * time.Minute)})
	require.NoError(t, err)
	counter := b.Locks.(lease.ContentionCounter)
	for _, ago := range []time.Duration{4 * time.Minute, 2 * time.Minute, 10 * time.Second} {
		require.NoError(t, counter.RecordContention(ctx, hot.Job, hot, now.Add(-ago), time.Minute))
	}
	calm, err := b.Locks.Acquire(ctx, lease.AcquireParams{Job: "entry/beta/GBPUSD", Owner: "trader-b#0badf00d", TTL: time.Hour, Now: now})
	require.NoError(t, err)
	require.NoError(t, counter.RecordContention(ctx, calm.Job, calm, now, time.Minute))
	// A job of the same name as a lock: its lease is not the lock.
	_, err = b.Leases.Acquire(ctx, lease.AcquireParams{Job: fx.Name, Owner: "coordinator-1", TTL: time.Hour, Now: now})
	require.NoError(t, err)

	base := serveUI(t, baton.MustCatalog(fx.Job(nil)), "--store", path)
	code, body := get(t, http.DefaultClient, base+"/jobs/fx/lease")
	require.Equal(t, http.StatusOK, code, body)
	_, locks, ok := strings.Cut(body, `id="locks"`)
	require.True(t, ok, "no lock table: %s", body)
	rows := strings.Split(locks, "<tr class=")[1:]
	require.Len(t, rows, 2, locks)
	require.Contains(t, rows[0], "entry/alpha/EURUSD", "the escalated key comes first")
	require.Contains(t, rows[0], "lock-escalated")
	require.Contains(t, rows[0], ">trader-a<")
	require.Contains(t, rows[0], "trader-a#00c0ffee")
	require.Contains(t, rows[0], `<span class="pill escalated">escalated</span>`)
	require.Contains(t, rows[0], "<td>3</td>", "three refusals")
	require.Contains(t, rows[1], "entry/beta/GBPUSD")
	require.Contains(t, rows[1], ">trader-b<")
	require.NotContains(t, rows[1], "escalated")
	require.Contains(t, rows[1], "<td>1</td>", "one refusal")
	require.NotContains(t, locks, "coordinator-1", "a job's lease is not a lock")
}
