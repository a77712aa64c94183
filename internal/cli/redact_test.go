package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
)

// TestNoResultOrSecretInLogs: a run whose processor returns a result and
// fails with an error quoting a DSN leaves neither in the logs, text or
// JSON, nor in the dead-letter reason 'dlq list' shows.
func TestNoResultOrSecretInLogs(t *testing.T) {
	t.Parallel()
	catalog := baton.MustCatalog(baton.Job{
		Name: "leaky", Schedule: "rate(1 minute)", Assets: []string{"ok", "bad"},
		Limits: baton.Limits{MaxAttempts: 1},
		Processor: baton.ProcessorFunc(func(_ context.Context, tk baton.Task) ([]byte, error) {
			if tk.Asset == "bad" {
				return nil, baton.Permanent(errors.New("dial postgres://app:s3cr3t-pw@db/app: refused"))
			}
			return []byte("RESULT-7f3a-private"), nil
		}),
	})
	for _, format := range []string{"text", "json"} {
		store := filepath.Join(t.TempDir(), "baton.db")
		var out, errOut bytes.Buffer
		code := Main(t.Context(), catalog, []string{"run", "--once", "--store", store, "--log", "debug", "--log-format", format}, &out, &errOut)
		require.Equal(t, ExitFailure, code, "an item ended DEAD: %s", errOut.String())
		require.Contains(t, errOut.String(), "[REDACTED]", format)
		require.NotContains(t, errOut.String(), "s3cr3t-pw", format)
		require.NotContains(t, errOut.String(), "RESULT-7f3a-private", format)
		require.Contains(t, out.String(), "dial postgres://app:[REDACTED]@db/app", "the item's recorded error")
		require.NotContains(t, out.String(), "s3cr3t-pw")
		if format != "json" {
			continue
		}
		// --log-format json: every log line is the functions' shape.
		n := 0
		for line := range strings.Lines(errOut.String()) {
			if !strings.HasPrefix(line, "{") {
				continue // the command's own one-line error
			}
			var rec map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
			for _, k := range []string{"timestamp", "level", "message", "service"} {
				require.Contains(t, rec, k, line)
			}
			n++
		}
		require.Positive(t, n)
	}
}

// TestSetupFailsUnderEval: eval "$(baton setup …)" fails when setup
// fails, instead of exporting nothing silently.
func TestSetupFailsUnderEval(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	code, out, errOut := runMain(t, "setup", "--endpoint", "127.0.0.1:4567")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "is not an http(s) URL")
	cmd := exec.Command(sh, "-c", `set -e; eval "$BATON_SETUP_OUT"; echo continued`)
	cmd.Env = append(cmd.Environ(), "BATON_SETUP_OUT="+out)
	got, err := cmd.CombinedOutput()
	require.Error(t, err, "the eval fails: %s", got)
	require.Contains(t, string(got), "baton setup failed")
	require.NotContains(t, string(got), "continued")
	require.Equal(t, 1, strings.Count(out, "\n"))
}
