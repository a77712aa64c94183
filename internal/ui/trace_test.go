package ui_test

import (
	"bytes"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/cli"
)

// A traced run's page shows the trace id its record keeps (the span that
// opened the run), for the run and on each item's row and timeline bar
// (their spans link to the run's): as text, and as a link with
// --trace-url. An untraced run's page shows none.
func TestRunPageShowsTraceID(t *testing.T) {
	t.Parallel()
	catalog := fx.Catalog(nil)
	store := filepath.Join(t.TempDir(), "baton.db")
	run := func(args ...string) string {
		var out, errOut bytes.Buffer
		require.Equal(t, 0, cli.Main(t.Context(), catalog, append([]string{"run", "--once", "--store", store}, args...), &out, &errOut), errOut.String())
		return out.String()
	}
	out := run("--trace", "stdout")
	m := regexp.MustCompile(`(?m)^trace ([0-9a-f]{32})\n  baton\.coordinator .* run_id=(\S+) `).FindStringSubmatch(out)
	require.NotNil(t, m, "the trace and its run:\n%s", out)
	traceID, traced := m[1], m[2]
	cells := func(body string) []string {
		var ids []string
		for _, c := range regexp.MustCompile(`<td class="trace" data-trace-id="([0-9a-f]+)">`).FindAllStringSubmatch(body, -1) {
			ids = append(ids, c[1])
		}
		return ids
	}
	rows := len(fx.Assets) + 1

	base := serveUI(t, catalog, "--store", store, "--trace-url", "https://tracing.example/trace/{trace_id}?env=dev")
	code, body := get(t, withJar(t), runURL(base, traced))
	require.Equal(t, http.StatusOK, code, body)
	link := `<a href="https://tracing.example/trace/` + traceID + `?env=dev" class="trace-link">` + traceID + `</a>`
	require.Contains(t, body, `<span id="run-trace" data-trace-id="`+traceID+`">trace `+link+`</span>`)
	require.Equal(t, slicesOf(traceID, rows), cells(body), "each item's row")
	require.Equal(t, rows+1, strings.Count(body, link), "the run's and each row's link")
	require.Equal(t, rows, strings.Count(body, `<g class="row" data-asset=`))
	bars := regexp.MustCompile(`<g class="row" [^>]*data-trace-id="`+traceID+`"`).FindAllString(body, -1)
	require.Len(t, bars, rows, "each timeline bar")

	// Without --trace-url: the id as text.
	base = serveUI(t, catalog, "--store", store)
	code, body = get(t, withJar(t), runURL(base, traced))
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `<span id="run-trace" data-trace-id="`+traceID+`">trace <code>`+traceID+`</code></span>`)
	require.Equal(t, slicesOf(traceID, rows), cells(body))
	require.NotContains(t, body, "trace-link")

	// The tick run again untraced: its new generation's record has no
	// trace id, and the page shows none.
	m = regexp.MustCompile(`"id": *"(fx@[^"]+#2)"`).FindStringSubmatch(run("--force", "--json"))
	require.NotNil(t, m)
	code, body = get(t, withJar(t), runURL(base, m[1]))
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `id="run-state"`)
	require.NotContains(t, body, "run-trace", "a record without a trace id shows none")
	require.NotContains(t, body, "data-trace-id")
	require.NotContains(t, body, "<th title=\"the item's spans link")
	code, body = get(t, withJar(t), runURL(base, traced))
	require.Equal(t, http.StatusOK, code, body)
	require.NotContains(t, body, "data-trace-id", "nor does the superseded generation's")
}

func slicesOf(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// A --trace-url the dashboard could not link with is refused, naming
// what is wrong.
func TestTraceURLIsChecked(t *testing.T) {
	t.Parallel()
	for arg, want := range map[string]string{
		"https://tracing.example/trace/":         "no {trace_id}",
		"javascript:alert(1)//{trace_id}":        "not an http or https URL",
		"/trace/{trace_id}":                      "not an http or https URL",
		"https://tracing.example/{trace_id}/%zz": "invalid URL escape",
	} {
		var out, errOut bytes.Buffer
		code := cli.Main(t.Context(), fx.Catalog(nil), []string{"ui", "--store", filepath.Join(t.TempDir(), "baton.db"), "--trace-url", arg}, &out, &errOut)
		require.Equal(t, cli.ExitUsage, code, arg)
		require.Contains(t, errOut.String(), "--trace-url", arg)
		require.Contains(t, errOut.String(), want, arg)
	}
}
