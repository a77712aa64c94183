package archtest

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// adapter reports whether an import path is an engine's adapter or
// driver: what only the engine's own package (and its registration) may
// import, so that an entry point opens engines through the registry
// (backend.Open) and accepts each one its binary links.
func adapter(path string) bool {
	for _, p := range []string{
		"github.com/batonhq/baton/internal/sqlite",
		"github.com/batonhq/baton/internal/postgres",
		"github.com/batonhq/baton/internal/awsdynamodb",
		"github.com/batonhq/baton/internal/awssqs",
		"github.com/batonhq/baton/internal/backend/sqlitebackend",
		"github.com/batonhq/baton/internal/backend/postgresbackend",
		"github.com/batonhq/baton/internal/backend/awsbackend",
		"modernc.org/sqlite",
		"github.com/jackc/pgx",
		"github.com/aws/aws-sdk-go-v2/service/dynamodb",
		"github.com/aws/aws-sdk-go-v2/service/sqs",
	} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// registryOnly are the packages that open engines through the registry
// alone: they import no adapter (their tests may, to link engines).
var registryOnly = []string{"./internal/cli"}

func TestCLIOpensEnginesThroughTheRegistry(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	for _, pkg := range registryOnly {
		imports := listImports(t, root, pkg)
		require.Contains(t, imports, "github.com/batonhq/baton/internal/backend", "the import listing of %s looks incomplete", pkg)
		var bad []string
		for _, p := range imports {
			if adapter(p) {
				bad = append(bad, p)
			}
		}
		require.Empty(t, bad, "%s must open engines through the registry (internal/backend) but imports these adapters", pkg)
	}
	// The check can fail: an engine's package imports its adapter.
	require.Contains(t, listImports(t, root, "./internal/backend/sqlitebackend"), "github.com/batonhq/baton/internal/sqlite")
	require.True(t, adapter("github.com/batonhq/baton/internal/sqlite"))
	require.True(t, adapter("github.com/jackc/pgx/v5/pgxpool"))
	require.False(t, adapter("github.com/batonhq/baton/internal/sqlitex"))
	require.False(t, adapter("github.com/batonhq/baton/internal/backend"))
}

// listImports lists pkg's direct imports, its tests' left out.
func listImports(t *testing.T, root, pkg string) []string {
	t.Helper()
	cmd := exec.Command(goTool(t), "list", "-f", `{{join .Imports "\n"}}`, pkg)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list %s: %s", pkg, stderr.String())
	return strings.Fields(string(out))
}
