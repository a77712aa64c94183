package ui_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/cli"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// hostile is text from outside (an error, a dead-letter reason) that a
// page must show as text, never run.
const hostile = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">"'&`

// store is an embedded store holding runs in every state, built through
// the real engine: a complete run (one item retried), a partial run (an
// item DEAD with a hostile error, the derived item cancelled), an
// in-flight run (one item RUNNING, one SUCCEEDED, the rest pending), a
// hostile dead letter and an expired coordinator lease.
type store struct {
	path     string
	catalog  *baton.Catalog
	b        backend.Backend
	complete ledger.RunID
	partial  ledger.RunID
	inFlight ledger.RunID
	running  ledger.Item // the in-flight run's RUNNING item
}

// scripted fails EURUSD's first attempt in the complete and the partial
// runs, and USDJPY for good in the partial one; everything else is the reference processor.
type scripted struct {
	inner             baton.Processor
	complete, partial time.Time
}

func (p scripted) Process(ctx context.Context, t baton.Task) ([]byte, error) {
	switch {
	case t.Asset == "EURUSD" && t.Attempt == 1 && (t.Nominal.Equal(p.complete) || t.Nominal.Equal(p.partial)):
		return nil, errors.New("provider timeout (HTTP 503)")
	case t.Nominal.Equal(p.partial) && t.Asset == "USDJPY":
		return nil, baton.Permanent(errors.New("bad quote " + hostile))
	}
	return p.inner.Process(ctx, t)
}

func newStore(t *testing.T) *store {
	t.Helper()
	ctx := t.Context()
	base := time.Now().UTC().Truncate(time.Minute).Add(-5 * time.Minute)
	s := &store{path: filepath.Join(t.TempDir(), "baton.db")}
	j := fx.Job(&fx.Options{Latency: 20 * time.Millisecond})
	j.Processor = scripted{inner: j.Processor, complete: base, partial: base.Add(time.Minute)}
	s.catalog = baton.MustCatalog(j)
	b, err := sqlitebackend.Open(ctx, s.path)
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	s.b = b
	eng, err := exec.New(b, exec.Options{Catalog: s.catalog, Owner: "fixture", RetryDelay: 50 * time.Millisecond, Consumers: 2})
	require.NoError(t, err)

	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Consume(cctx) })
	for i, id := range []*ledger.RunID{&s.complete, &s.partial} {
		tick := base.Add(time.Duration(i) * time.Minute)
		_, err := eng.Trigger(ctx, fx.Name, tick, false)
		require.NoError(t, err)
		wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
		run, _, err := eng.WaitSettled(wctx, fx.Name, tick, 20*time.Millisecond)
		wcancel()
		require.NoError(t, err)
		*id = run.ID
	}
	cancel()
	wg.Wait()

	// In flight: fanned out, nothing consumed; GBPUSD done and EURUSD
	// claimed by a worker that is still at it.
	tick := base.Add(2 * time.Minute)
	sum, err := eng.Trigger(ctx, fx.Name, tick, false)
	require.NoError(t, err)
	s.inFlight = sum.Run
	now := time.Now()
	gbp, err := b.Ledger.Claim(ctx, ledger.ClaimParams{Key: ledger.ItemKey{Run: s.inFlight, Asset: "GBPUSD"}, Owner: "worker-b", LeaseUntil: now.Add(time.Hour), Fence: sum.Fence, Now: now})
	require.NoError(t, err)
	_, err = b.Ledger.Complete(ctx, ledger.CompleteParams{Key: gbp.Key, Owner: "worker-b", Attempt: gbp.Attempt, Result: []byte(`{}`), Now: now.Add(150 * time.Millisecond)})
	require.NoError(t, err)
	s.running, err = b.Ledger.Claim(ctx, ledger.ClaimParams{Key: ledger.ItemKey{Run: s.inFlight, Asset: "EURUSD"}, Owner: "worker-a", LeaseUntil: now.Add(time.Hour), Fence: sum.Fence, Now: now.Add(50 * time.Millisecond)})
	require.NoError(t, err)

	require.NoError(t, b.DeadLetter.SendBatch(ctx, []queue.Message{
		{ID: "1", Body: []byte(hostile), Attributes: map[string]string{message.AttrError: "malformed: " + hostile}},
		message.New(ledger.ItemKey{Run: s.partial, Asset: "USDJPY"}, 1, false).QueueMessage(),
	}))
	// A coordinator that died holding the lease ten minutes ago.
	_, err = b.Leases.Acquire(ctx, lease.AcquireParams{Job: fx.Name, Owner: "coordinator-7f3a", TTL: time.Minute, Now: time.Now().Add(-10 * time.Minute)})
	require.NoError(t, err)
	return s
}

// serve runs `baton ui` on s with args and returns its base URL; the
// command stops at the end of the test.
func (s *store) serve(t *testing.T, args ...string) string {
	t.Helper()
	return serveUI(t, s.catalog, append([]string{"--store", s.path}, args...)...)
}

// serveUI runs `baton ui` for catalog with args on a free loopback port
// and returns its base URL; the command stops at the end of the test.
func serveUI(t *testing.T, catalog *baton.Catalog, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	pr, pw := io.Pipe()
	var errOut strings.Builder
	done := make(chan int, 1)
	all := append([]string{"ui", "--listen", "127.0.0.1:0", "--log", "error"}, args...)
	go func() {
		code := cli.Main(ctx, catalog, all, pw, &lockedWriter{w: &errOut})
		pw.Close()
		done <- code
	}()
	lines := bufio.NewScanner(pr)
	require.True(t, lines.Scan(), "baton ui printed nothing: %s", errOut.String())
	line := lines.Text()
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	_, rest, ok := strings.Cut(line, "serving http://")
	require.True(t, ok, "unexpected first line %q", line)
	base := "http://" + strings.Fields(rest)[0]
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			require.Equal(t, 0, code, errOut.String())
		case <-time.After(10 * time.Second):
			t.Error("baton ui did not stop")
		}
	})
	return strings.TrimSuffix(base, "/")
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// noRedirect is a client that shows redirects instead of following them.
func noRedirect() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
