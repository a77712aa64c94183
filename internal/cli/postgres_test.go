package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend/postgresbackend"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/pgtest"
)

// TestMain stops the PostgreSQL server the postgres tests started.
func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

// newPostgresFixture sets up a fresh database and returns a fixture whose
// commands run with --backend postgres on it.
func newPostgresFixture(t *testing.T) *opsFixture {
	t.Helper()
	dsn := pgtest.DSN(t)
	_, err := postgresbackend.Setup(t.Context(), dsn, 5)
	require.NoError(t, err)
	b, err := postgresbackend.Open(t.Context(), postgresbackend.Params{DSN: dsn})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	require.NotNil(t, b.DeadLetter)
	return newFixture(t, b, []string{"--backend", "postgres", "--dsn", dsn})
}

// TestOperatorCommandsOnPostgres runs the checks every backend must pass
// (those the AWS twin runs) through --backend postgres, each on a
// database of its own.
func TestOperatorCommandsOnPostgres(t *testing.T) {
	t.Parallel()
	pgtest.ServerDSN(t)
	for _, tc := range []struct {
		name     string
		bodyFunc func(*testing.T, *opsFixture)
	}{
		{"backfill runs only ticks not done", testBackfillRunsOnlyTicksNotDone},
		{"redrive of a succeeded item does not re-run it", testRedrive},
		{"forced release refused for a live owner", testLeaseReleaseRefusesLiveOwner},
		{"lease show and release of an expired lease", testLeaseReleaseExpired},
		{"cancel", testCancel},
		{"replay item, with --force", testReplayItem},
		{"bounded redrive", testRedriveMax},
		{"dlq purge", testDLQPurge},
		{"status --json matches the ledger", testStatusJSONMatchesLedger},
		{"status finds stuck items past --runs", testStatusFindsStuckItemsPastRuns},
		{"status shows limits and waiting items", testStatusShowsLimitsAndWaitingItems},
		{"pause and resume", testPauseResume},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.bodyFunc(t, newPostgresFixture(t)) })
	}
}

// TestPostgresPath is the PostgreSQL workflow of docs/postgres.md: setup applies the
// schema (and again, nothing), then run --once works from the variable
// alone, and a database never set up is refused with what to run.
func TestPostgresPath(t *testing.T) {
	dsn := pgtest.DSN(t)
	t.Setenv(postgresbackend.EnvDSN, "")
	t.Setenv("BATON_JOB", "")

	code, out, errOut := runMain(t, "setup", "--backend", "postgres", "--dsn", dsn, "--max-receives", "3")
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Regexp(t, `schema version \d+ \(migrations applied: 1`, out)
	require.Contains(t, out, "to work-dlq after 3 receives")
	code, out, _ = runMain(t, "setup", "--backend", "postgres", "--dsn", dsn, "--max-receives", "3")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "migrations applied: none (already current)")

	t.Setenv(postgresbackend.EnvDSN, dsn)
	code, out, errOut = runMain(t, "run", "--once", "--backend", "postgres", "--consumers", "2", "--timeout", "30s")
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, out, "(postgres)")
	for _, name := range append(append([]string{}, fx.Assets...), fx.DXY) {
		require.Regexp(t, `(?m)^`+name+`\s+SUCCEEDED\s+1\s`, out, name)
	}
	require.Regexp(t, `run fx@\S+#1: complete — 8 succeeded, 0 dead, 0 cancelled`, out)

	code, out, errOut = runMain(t, "status", "--backend", "postgres")
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, out, "complete")

	// A database without the schema says what to run.
	code, _, errOut = runMain(t, "run", "--once", "--backend", "postgres", "--dsn", pgtest.DSN(t))
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, "baton setup --backend postgres")
	require.False(t, strings.Contains(errOut, "panic"))
}

// replay tick on PostgreSQL runs consumers in this process by default, as
// on the embedded store: with no other consumer running (no 'baton serve'
// nor 'baton run'), the tick settles instead of waiting out --timeout.
func TestReplayTickOnPostgresConsumesByDefault(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	_, err := postgresbackend.Setup(t.Context(), dsn, 0)
	require.NoError(t, err)
	at := time.Now().UTC().Add(-2 * time.Minute)
	code, out, errOut := runMain(t, "replay", "tick", "--backend", "postgres", "--dsn", dsn, "--job", fx.Name,
		"--at", at.Format(time.RFC3339), "--timeout", "15s")
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Regexp(t, `run fx@\S+#1: complete — 8 succeeded, 0 dead, 0 cancelled`, out)
}

func TestPostgresUsage(t *testing.T) {
	t.Setenv(postgresbackend.EnvDSN, "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"setup", "--backend", "postgres"}, "no database: set --dsn or BATON_PG_DSN"},
		{[]string{"setup", "--backend", "postgres", "--dsn", "x", "--max-receives", "0"}, "--max-receives must be at least 1"},
		{[]string{"setup", "--backend", "sqlite"}, "cannot be set up"},
		{[]string{"status", "--backend", "postgres"}, "no database: set --dsn or BATON_PG_DSN"},
		{[]string{"status", "--backend", "postgres", "--dsn", "x", "--pg-retry", "-1s"}, "--pg-retry must not be negative"},
	} {
		code, _, errOut := runMain(t, tc.args...)
		require.Equal(t, ExitUsage, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}

// TestServeOnPostgres: baton serve --backend postgres, fed a CloudEvent
// tick as a Knative PingSource sends it, opens the run; its pull
// consumers process every item from the PostgreSQL queue and the run
// settles; SIGTERM stops it cleanly.
func TestServeOnPostgres(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	_, err := postgresbackend.Setup(t.Context(), dsn, 0)
	require.NoError(t, err)
	const secret = "cli-secret-0123456789"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, fx.Catalog(nil), []string{"serve", "--backend", "postgres", "--dsn", dsn, "--addr", "127.0.0.1:0",
			"--auth-secret", secret, "--consumers", "2", "--batch-size", "100", "--grace", "1s", "--json", "--log", "warn"}, &out, &errOut)
	}()
	var start serveReport
	require.Eventually(t, func() bool {
		line, _, ok := strings.Cut(out.String(), "\n")
		return ok && json.Unmarshal([]byte(line), &start) == nil
	}, 10*time.Second, 10*time.Millisecond, "no start line; stderr: %s", errOut.String())
	require.Equal(t, "postgres", start.Backend)
	require.Equal(t, "database "+postgresbackend.Redact(dsn), start.Store)

	nominal := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	req, err := http.NewRequest(http.MethodPost, "http://"+start.Addr+"/", strings.NewReader(`{"job":"fx"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Ce-Specversion", "1.0")
	req.Header.Set("Ce-Id", "tick-1")
	req.Header.Set("Ce-Source", "/apis/v1/namespaces/default/pingsources/fx")
	req.Header.Set("Ce-Type", "dev.knative.sources.ping")
	req.Header.Set("Ce-Time", nominal.Format(time.RFC3339))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", body)
	require.Equal(t, "opened", body["outcome"])

	b, err := postgresbackend.Open(t.Context(), postgresbackend.Params{DSN: dsn})
	require.NoError(t, err)
	defer b.Close()
	require.Eventually(t, func() bool {
		run, err := b.Ledger.GetRun(t.Context(), "fx", nominal)
		return err == nil && run.State == ledger.RunComplete
	}, 30*time.Second, 20*time.Millisecond)
	items, err := b.Ledger.ListItems(t.Context(), ledger.RunID{Job: "fx", Nominal: nominal, Generation: 1})
	require.NoError(t, err)
	require.Len(t, items, len(fx.Assets)+1)

	cancel() // SIGTERM
	select {
	case code := <-done:
		require.Equal(t, ExitOK, code, "stderr: %s", errOut.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// The connection string's variable is read after the flags, so that no
// --help prints its password as a default.
func TestHelpHidesTheDSN(t *testing.T) {
	t.Setenv(postgresbackend.EnvDSN, "postgres://baton:do-not-print-this@db:5432/baton")
	for _, cmd := range []string{"serve", "run", "status", "setup"} {
		code, out, errOut := runMain(t, cmd, "--help")
		require.Equal(t, ExitOK, code, cmd)
		require.Contains(t, out+errOut, "dsn", cmd)
		require.NotContains(t, out+errOut, "do-not-print-this", cmd)
	}
}
