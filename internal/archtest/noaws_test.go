package archtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// corePackages are the cloud-neutral packages: neither they nor anything
// they import, transitively, may import an AWS package.
var corePackages = []string{
	".",
	"./batontest",
	"./engines/postgres",
	"./engines/sqlite",
	"./examples/fx",
	"./internal/backend",
	"./internal/backend/postgresbackend",
	"./internal/backend/sqlitebackend",
	"./internal/consumer",
	"./internal/coordinator",
	"./internal/effect",
	"./internal/exec",
	"./internal/fanin",
	"./internal/jobmodeltest",
	"./internal/lease",
	"./internal/ledger",
	"./internal/message",
	"./internal/pgtest",
	"./internal/poller",
	"./internal/postgres",
	"./internal/queue",
	"./internal/runstatus",
	"./internal/schedule",
	"./internal/sqlite",
	"./internal/sqlstore",
	"./internal/telemetry",
	"./internal/ui",
}

// forbidden reports whether an import path belongs to the AWS SDKs.
func forbidden(path string) bool {
	return path == "github.com/aws" || strings.HasPrefix(path, "github.com/aws/")
}

func TestCoreImportsNoAWS(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	for _, pkg := range corePackages {
		t.Run(strings.TrimPrefix(pkg, "./internal/"), func(t *testing.T) {
			t.Parallel()
			deps := listDeps(t, root, pkg)
			self := strings.TrimSuffix("github.com/batonhq/baton/"+strings.TrimPrefix(pkg, "./"), "/.")
			require.Contains(t, deps, self, "the dependency listing of %s looks incomplete", pkg)
			require.Contains(t, deps, "runtime", "the dependency listing of %s looks incomplete", pkg)
			var bad []string
			for _, d := range deps {
				if forbidden(d) {
					bad = append(bad, d)
				}
			}
			require.Empty(t, bad, "%s must stay cloud-neutral but depends on these AWS packages", pkg)
		})
	}
}

// lambdaPackages are what a Lambda bootstrap links: baton's own and the
// public package users' bootstraps import.
var lambdaPackages = []string{"./functions/coordinator", "./functions/consumer", "./batonlambda"}

// embeddedDriver reports whether an import path is an engine a Lambda
// bootstrap does not use: the SQLite and PostgreSQL drivers and adapters.
func embeddedDriver(path string) bool {
	for _, p := range []string{"modernc.org/sqlite", "github.com/batonhq/baton/internal/sqlite", "github.com/jackc/pgx", "github.com/lib/pq", "github.com/batonhq/baton/internal/postgres"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// A Lambda bootstrap links only the AWS engine: no SQLite driver, built as
// `sam build` builds it (linux/arm64, no cgo).
func TestLambdaLinksNoEmbeddedEngine(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	for _, pkg := range lambdaPackages {
		t.Run(strings.TrimPrefix(pkg, "./"), func(t *testing.T) {
			t.Parallel()
			deps := listDeps(t, root, pkg, "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
			require.Contains(t, deps, "github.com/batonhq/baton/internal/awsdynamodb", "the listing of %s looks incomplete", pkg)
			var bad []string
			for _, d := range deps {
				if embeddedDriver(d) {
					bad = append(bad, d)
				}
			}
			require.Empty(t, bad, "%s is a Lambda bootstrap but links these engines it does not use", pkg)
		})
	}
	// The check can fail: the CLI links the embedded engine and the
	// PostgreSQL one.
	deps := listDeps(t, root, "./cmd/baton")
	require.True(t, slices.ContainsFunc(deps, embeddedDriver), "cmd/baton links SQLite, so the check sees it")
	require.True(t, slices.Contains(deps, "github.com/jackc/pgx/v5"), "cmd/baton links pgx, so the check sees it")
}

// The check itself must be able to fail.
func TestForbidden(t *testing.T) {
	t.Parallel()
	require.True(t, forbidden("github.com/aws/aws-sdk-go-v2/service/sqs"))
	require.True(t, forbidden("github.com/aws/smithy-go"))
	require.True(t, forbidden("github.com/aws/aws-lambda-go/lambda"))
	require.False(t, forbidden("github.com/awslabs/other"))
	require.False(t, forbidden("github.com/batonhq/baton/internal/ledger"))
}

// The listing sees a module package importing AWS when there is one: the
// SDK is in the module graph, so list it directly.
func TestListDepsSeesAWS(t *testing.T) {
	t.Parallel()
	deps := listDeps(t, moduleRoot(t), "github.com/aws/smithy-go")
	require.Contains(t, deps, "github.com/aws/smithy-go")
}

func listDeps(t *testing.T, root, pkg string, env ...string) []string {
	t.Helper()
	cmd := exec.Command(goTool(t), "list", "-deps", "-test=false", "-f", "{{.ImportPath}}", pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list -deps %s: %s", pkg, stderr.String())
	return strings.Fields(string(out))
}

func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	require.NoError(t, err, "no go tool on PATH")
	return p
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above the test directory")
		dir = parent
	}
}
