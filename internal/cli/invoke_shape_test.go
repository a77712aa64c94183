package cli

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The documented shape of a function's log line (docs/deploying-aws.md, "Logs and
// metrics"): Powertools' keys first, then baton's.
var powertoolsKeys = []string{"timestamp", "level", "message", "service", "cold_start", "function_name", "function_request_id", "xray_trace_id"}

// TestInvokeLogAndMetricShape: a Lambda log line and an EMF line from
// 'baton invoke' have the documented shape: Powertools' keys, baton's
// job/run/key/phase/fence, durations in milliseconds, one INFO line per
// item; EMF in the configured namespace with the Service dimension, and
// ColdStart on the first invocation.
func TestInvokeLogAndMetricShape(t *testing.T) {
	t.Setenv("BATON_SERVICE_NAME", "baton-shape")
	t.Setenv("BATON_METRICS_NAMESPACE", "Shape/Baton")
	t.Setenv("BATON_TRIGGER_MAX_AGE", "0") // the fixtures' fixed ticks, as env.json waives the bound for sam local
	store := filepath.Join(t.TempDir(), "baton.db")
	trace := "Root=1-6741a1b2-0123456789abcdef01234567;Parent=89abcdef01234567;Sampled=0"
	run := func(function, file string) (logs, metrics []map[string]any) {
		t.Helper()
		code, out, errOut := runMain(t, "invoke", function, "--event", eventFile(file), "--store", store,
			"--request-id", "req-"+function, "--trace-id", trace, "--log", "info")
		require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
		for line := range strings.Lines(errOut) {
			var rec map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &rec), "every line of stderr is JSON: %s", line)
			if _, isEMF := rec["_aws"]; isEMF {
				metrics = append(metrics, rec)
				continue
			}
			// Powertools' keys come first, in its order.
			require.True(t, strings.HasPrefix(line, `{"timestamp":"`), line)
			for i := 1; i < len(powertoolsKeys); i++ {
				require.Less(t, keyIndex(line, powertoolsKeys[i-1]), keyIndex(line, powertoolsKeys[i]), line)
			}
			for _, k := range powertoolsKeys {
				require.Contains(t, rec, k, "log line without %s: %s", k, line)
			}
			require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, rec["timestamp"])
			require.Contains(t, []string{"DEBUG", "INFO", "WARN", "ERROR"}, rec["level"])
			require.Equal(t, "baton-shape", rec["service"])
			require.Equal(t, "req-"+function, rec["function_request_id"])
			require.Equal(t, "1-6741a1b2-0123456789abcdef01234567", rec["xray_trace_id"])
			require.IsType(t, true, rec["cold_start"])
			for k := range rec {
				require.NotContains(t, []string{"time", "msg", "duration", "latency", "processing", "request_id", "function"}, k,
					"slog's own key or a duration not in milliseconds: %s", line)
			}
			logs = append(logs, rec)
		}
		return logs, metrics
	}

	logs, metrics := run("coordinator", "coordinator-scheduled.json")
	summary := find(t, logs, "run done")
	require.Equal(t, "fx", summary["job"])
	require.Equal(t, "fx@2026-11-21T12:01:00Z#1", summary["run"])
	require.EqualValues(t, 1, summary["fence"])
	require.Contains(t, summary, "duration_ms")
	require.Equal(t, true, summary["cold_start"], "a new process: a cold start")
	cold := findMetric(t, metrics, "ColdStart")
	require.EqualValues(t, 1, cold["ColdStart"])
	require.Equal(t, []any{[]any{"function_name", "service"}}, emfDims(cold))
	require.Equal(t, "baton-shape", cold["service"])
	opened := findMetric(t, metrics, "RunsOpened")
	require.Equal(t, "Shape/Baton", emfNamespace(opened))
	require.Equal(t, []any{[]any{"Job", "service"}}, emfDims(opened))
	require.Equal(t, "baton-shape", opened["service"])
	require.Equal(t, "fx", opened["Job"])

	logs, metrics = run("consumer", "consumer-batch.json")
	var items []map[string]any
	for _, l := range logs {
		if l["level"] == "INFO" && l["phase"] == "item" {
			items = append(items, l)
		}
	}
	require.Len(t, items, 7, "one line per item (the batch holds 7 messages)")
	keys := map[string]bool{}
	for _, it := range items {
		for _, k := range []string{"job", "run", "key", "fence", "asset", "status", "attempt", "processing_ms"} {
			require.Contains(t, it, k)
		}
		require.True(t, strings.HasPrefix(it["key"].(string), it["run"].(string)+"/"), it)
		keys[it["key"].(string)] = true
	}
	require.Len(t, keys, 7)
	succeeded := findMetric(t, metrics, "ItemsSucceeded")
	require.Equal(t, "Shape/Baton", emfNamespace(succeeded))
	require.Equal(t, []any{[]any{"Job", "service"}}, emfDims(succeeded))
	for _, m := range metrics {
		for _, k := range []string{"result", "payload"} {
			require.NotContains(t, m, k)
		}
	}
}

func keyIndex(line, key string) int { return strings.Index(line, `"`+key+`":`) }

func find(t *testing.T, logs []map[string]any, message string) map[string]any {
	t.Helper()
	i := slices.IndexFunc(logs, func(l map[string]any) bool { return l["message"] == message })
	require.GreaterOrEqual(t, i, 0, "no log line %q", message)
	return logs[i]
}

func findMetric(t *testing.T, metrics []map[string]any, name string) map[string]any {
	t.Helper()
	i := slices.IndexFunc(metrics, func(m map[string]any) bool { _, ok := m[name]; return ok })
	require.GreaterOrEqual(t, i, 0, "no EMF record with %s", name)
	return metrics[i]
}

func emfDirective(m map[string]any) map[string]any {
	return m["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
}

func emfDims(m map[string]any) any         { return emfDirective(m)["Dimensions"] }
func emfNamespace(m map[string]any) string { return emfDirective(m)["Namespace"].(string) }
