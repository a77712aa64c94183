package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/ledger"
)

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestServeEndToEnd(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "baton.db")
	const secret = "cli-secret-0123456789"
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, fx.Catalog(nil), []string{"serve", "--store", store, "--addr", "127.0.0.1:0", "--auth-secret", secret,
			"--consumers", "2", "--grace", "1s", "--json", "--log", "warn"}, &out, &errOut)
	}()
	var start serveReport
	require.Eventually(t, func() bool {
		line, _, ok := strings.Cut(out.String(), "\n")
		return ok && json.Unmarshal([]byte(line), &start) == nil
	}, 10*time.Second, 10*time.Millisecond, "no start line; stderr: %s", errOut.String())
	require.Equal(t, serveReport{Event: "serving", Addr: start.Addr, Backend: "sqlite", Store: store, Auth: "secret", Pull: true, Consumers: 2, Jobs: "fx"}, start)

	nominal := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	req, err := http.NewRequest(http.MethodPost, "http://"+start.Addr+"/", strings.NewReader(`{"job":"fx"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Ce-Specversion", "1.0")
	req.Header.Set("Ce-Id", "tick-1")
	req.Header.Set("Ce-Source", "/test")
	req.Header.Set("Ce-Type", "dev.knative.sources.ping")
	req.Header.Set("Ce-Time", nominal.Format(time.RFC3339))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", body)
	require.Equal(t, "opened", body["outcome"])

	// The coordinator function's age bound holds here too by default: a
	// scheduled trigger from seven hours ago is a stale delivery.
	stale := time.Now().UTC().Truncate(time.Minute).Add(-7 * time.Hour).Format(time.RFC3339)
	req, err = http.NewRequest(http.MethodPost, "http://"+start.Addr+"/", strings.NewReader(`{"job":"fx","scheduledTime":"`+stale+`"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	body = nil
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%v", body)
	require.Contains(t, body["error"], "beyond the bound of 6h0m0s for scheduled triggers: a stale delivery")

	b, err := sqlitebackend.OpenReadOnly(context.Background(), store)
	require.NoError(t, err)
	defer b.Close()
	require.Eventually(t, func() bool {
		run, err := b.Ledger.GetRun(context.Background(), "fx", nominal)
		return err == nil && run.State == ledger.RunComplete
	}, 30*time.Second, 20*time.Millisecond)

	cancel() // SIGTERM
	select {
	case code := <-done:
		require.Equal(t, ExitOK, code, "stderr: %s", errOut.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2)
	require.Contains(t, lines[1], `"event":"stopped"`)
}

func TestServeHelpHidesTheSecret(t *testing.T) {
	t.Setenv(envAuthSecret, "do-not-print-this-secret")
	code, out, errOut := runMain(t, "serve", "--help")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out+errOut, "--auth-secret")
	require.NotContains(t, out+errOut, "do-not-print-this-secret")
}

func TestServeRefusals(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "baton.db")
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--addr", "0.0.0.0:8080"}, "--addr 0.0.0.0:8080 is not loopback: verify callers with --auth-oidc-issuer"},
		{[]string{"--addr", "127.0.0.1:0", "--auth-oidc-audience", "https://x"}, "OIDC needs an issuer"},
		{[]string{"--addr", "127.0.0.1:0", "--auth-secret", "short"}, "shorter than 16 bytes"},
		{[]string{"--consumers", "0"}, "--consumers must be at least 1"},
		{[]string{"--batch-size", "101"}, "--batch-size must be within 1..100, got 101"},
		{[]string{"--addr", "127.0.0.1:0", "--batch-size", "50"}, "--batch-size 50: the sqlite backend takes at most 10 messages per batch"},
		{[]string{"--trigger-age", "-1m"}, "--trigger-age must not be negative"},
		{[]string{"--backend", "oracle", "--addr", "127.0.0.1:0"}, `--backend: unknown engine "oracle" (engines: aws, postgres, sqlite;`},
	} {
		code, _, errOut := runMain(t, append([]string{"serve", "--store", store}, tc.args...)...)
		require.Equal(t, ExitUsage, code, "%v", tc.args)
		require.Contains(t, errOut, tc.wantErr, "%v", tc.args)
		require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %s", errOut)
	}
}
