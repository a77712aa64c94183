package archtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// otelSDK reports whether an import path is OpenTelemetry's SDK or an
// exporter: what a user links into their own bootstrap, never baton's
// Lambda packages (only the API, which is a no-op until a provider is
// set).
func otelSDK(path string) bool {
	return strings.HasPrefix(path, "go.opentelemetry.io/otel/sdk") || strings.HasPrefix(path, "go.opentelemetry.io/otel/exporters")
}

// A Lambda bootstrap links OpenTelemetry's API, not its SDK or an
// exporter; the CLI links the SDK (for run --trace stdout), so the
// check can fail.
func TestLambdaLinksNoOTelSDK(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	for _, pkg := range lambdaPackages {
		deps := listDeps(t, root, pkg, "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
		require.Contains(t, deps, "go.opentelemetry.io/otel/trace", "%s traces through the API", pkg)
		var bad []string
		for _, d := range deps {
			if otelSDK(d) {
				bad = append(bad, d)
			}
		}
		require.Empty(t, bad, "%s is a Lambda bootstrap: the OpenTelemetry SDK and exporters are the user's to link", pkg)
	}
	require.True(t, slices.ContainsFunc(listDeps(t, root, "./cmd/baton"), otelSDK), "cmd/baton links the SDK, so the check sees it")
}

// maxBootstrap is the most a Lambda bootstrap may weigh, built as
// functions/lambda.mk builds it.
const maxBootstrap = 15 << 20

// The consumer's bootstrap, built as `sam build` builds it, stays within
// maxBootstrap.
func TestLambdaBootstrapSize(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	out := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command(goTool(t), "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", out, "./functions/consumer")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	fi, err := os.Stat(out)
	require.NoError(t, err)
	require.LessOrEqual(t, fi.Size(), int64(maxBootstrap), "the consumer's bootstrap is %.1f MiB", float64(fi.Size())/(1<<20))
	t.Logf("bootstrap: %.1f MiB", float64(fi.Size())/(1<<20))
}
