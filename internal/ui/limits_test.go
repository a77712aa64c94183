package ui_test

import (
	"context"
	"errors"
	"html"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/ratelimit"
)

// A job's page shows its limits now (the busy key, its holder and its
// waiter) and its waiting items with their next attempt and last error;
// the run page shows each waiting item's next attempt.
func TestPagesShowLimitsAndWaitingItems(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	job := baton.Job{Name: "limited", Schedule: "rate(1 minute)", Assets: []string{"b1", "b2"},
		RateLimits: []baton.RateLimit{{Name: "per-tenant", InFlight: 1, Keyed: true, PerItem: true,
			Key: func(t baton.Task) string { return "tenant-" + t.Asset }}},
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) {
			return nil, baton.RetryAfter(time.Hour, errors.New("GET /feed: 429 Too Many Requests"))
		})}
	catalog := baton.MustCatalog(job)
	path := filepath.Join(t.TempDir(), "baton.db")
	b, err := sqlitebackend.Open(ctx, path)
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	now := time.Now().UTC().Truncate(time.Millisecond)
	eng, err := exec.New(b, exec.Options{Catalog: catalog, Owner: "test", NowFunc: func() time.Time { return now }})
	require.NoError(t, err)
	tick := now.Truncate(time.Minute)
	holderItem := ledger.ItemKey{Run: ledger.RunID{Job: "limited", Nominal: tick.Add(-time.Minute), Generation: 1}, Asset: "b1"}
	require.NoError(t, b.RateLimits.Hold(ctx, ratelimit.SlotParams{Name: ratelimit.KeyedName("per-tenant", "tenant-b1"), Slot: 0,
		Holder: "host/1/consumer/" + holderItem.String() + "/r", Until: now.Add(time.Hour), Now: now}))
	_, err = eng.Trigger(ctx, "limited", tick, false)
	require.NoError(t, err)
	run := ledger.RunID{Job: "limited", Nominal: tick, Generation: 1}
	waiter, failed := ledger.ItemKey{Run: run, Asset: "b1"}, ledger.ItemKey{Run: run, Asset: "b2"}
	msgs, err := b.Work.Receive(ctx, queue.ReceiveParams{Max: queue.MaxBatch, Visibility: time.Minute, Now: time.Now()})
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	res := eng.Consumer.Handle(ctx, time.Now().Add(30*time.Second), msgs)
	statuses := map[string]string{}
	for _, o := range res.Items {
		statuses[o.Key] = o.Status
	}
	require.Equal(t, map[string]string{waiter.String(): consumer.StatusLimited, failed.String(): consumer.StatusFailed}, statuses)

	base := serveUI(t, catalog, "--store", path)
	c := withJar(t)
	code, body := get(t, c, base+"/jobs/limited")
	require.Equal(t, http.StatusOK, code, body)
	text := html.UnescapeString(body)
	require.Contains(t, text, "Rate limits now")
	require.Regexp(t, `(?s)<tr data-key="tenant-b1">.*?1/1.*?slot 0: `+regexp.QuoteMeta(holderItem.String())+` until .*?`+regexp.QuoteMeta(waiter.String())+`: next attempt `+regexp.QuoteMeta(now.Add(time.Second).Format(time.RFC3339)), text)
	require.Regexp(t, `(?s)<tr data-item="`+regexp.QuoteMeta(failed.String())+`">.*?`+regexp.QuoteMeta(now.Add(time.Hour).Format(time.RFC3339))+`.*?retry delay.*?429 Too Many Requests`, text)
	require.Regexp(t, `(?s)<tr data-item="`+regexp.QuoteMeta(waiter.String())+`">.*?limit per-tenant key "tenant-b1"`, text)

	code, body = get(t, c, runURL(base, run.String()))
	require.Equal(t, http.StatusOK, code, body)
	text = html.UnescapeString(body)
	require.Regexp(t, `(?s)<tr data-asset="b2" data-state="FAILED">.*?next attempt `+regexp.QuoteMeta(now.Add(time.Hour).Format(time.RFC3339))+` \(retry delay\)`, text)
	require.Regexp(t, `(?s)<tr data-asset="b1" data-state="FAILED">.*?next attempt .*?\(limit per-tenant key "tenant-b1"\)`, text)
}
