package cli

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/telemetry/spantree"
)

// run --once --trace stdout prints the tick's spans as a tree after the
// report: the coordinator's invocation with its steps, an item span per
// item under it, DXY under the input whose end enqueued it, the store's
// statements under the steps that ran them.
func TestRunOnceTraceStdout(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "baton.db")
	code, out, errOut := runMain(t, "run", "--once", "--store", store, "--trace", "stdout")
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	_, tree, ok := strings.Cut(out, "\ntrace ")
	require.True(t, ok, "a trace after the report:\n%s", out)
	require.Regexp(t, `(?m)^  baton\.coordinator \S+ job=fx invocation=trigger enqueued=7 run_id=fx@\S+#1 fence=\d+ outcome=opened$`, tree)
	for _, step := range []string{"lease.acquire", "run.open", "fanout", "settle", "lease.release"} {
		require.Regexp(t, `(?m)^    baton\.`+regexp.QuoteMeta(step)+` `, tree)
	}
	for _, a := range fx.Assets {
		require.Regexp(t, `(?m)^    baton\.item \S+ job=fx .*item\.key=fx@\S+/`+a+` fence=\d+ attempt=1 outcome=succeeded links=1$`, tree, a)
	}
	require.Regexp(t, `(?m)^      baton\.item \S+ job=fx .*item\.key=fx@\S+/DXY fence=\d+ attempt=1 outcome=succeeded links=1$`, tree,
		"DXY under one of its inputs")
	require.Regexp(t, `(?m)^      baton\.claim \S+ attempt=1 outcome=claimed$`, tree)
	// The embedded store's statements, each on one line under its step.
	require.Regexp(t, `(?m)^      baton\.claim \S+ attempt=1 outcome=claimed\n(        [A-Z]+ \S+ sql=[^\n]+\n)*        INSERT \S+ sql=INSERT INTO items `, tree)
}

func TestRunTraceFlagErrors(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "baton.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--once", "--trace", "jaeger", "--store", store}, `--trace "jaeger": want stdout`},
		{[]string{"run", "--trace", "stdout", "--store", store}, "--trace goes with --once"},
		{[]string{"run", "--once", "--json", "--trace", "stdout", "--store", store}, "--trace stdout prints a tree"},
	} {
		code, _, errOut := runMain(t, tc.args...)
		require.Equal(t, ExitUsage, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}

// A binary's own providers and log handler (MainWith) reach the commands
// that run work.
func TestMainWithTelemetry(t *testing.T) {
	t.Parallel()
	tp, rec := spantree.NewProvider()
	var logs bytes.Buffer
	tel := Telemetry{TracerProvider: tp, LogHandler: slog.NewJSONHandler(&logs, nil)}
	var out, errOut bytes.Buffer
	code := MainWith(t.Context(), "mybaton", fx.Catalog(nil), tel, []string{"run", "--once", "--store", filepath.Join(t.TempDir(), "b.db")}, &out, &errOut)
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	items := 0
	for _, s := range rec.Spans() {
		if s.Name() == "baton.item" {
			items++
		}
	}
	require.GreaterOrEqual(t, items, 8)
	require.Contains(t, logs.String(), `"msg":"lease acquired"`, "the binary's handler gets the records")
	require.NotContains(t, errOut.String(), "lease acquired")
}
