package archtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// corePackages are the cloud-neutral packages: neither they nor anything
// they import, transitively, may import an AWS package.
var corePackages = []string{
	"./internal/bars",
	"./internal/consumer",
	"./internal/contention",
	"./internal/coordinator",
	"./internal/engine",
	"./internal/fanin",
	"./internal/job",
	"./internal/lease",
	"./internal/ledger",
	"./internal/poller",
	"./internal/queue",
	"./internal/schedule",
	"./internal/scheduler",
	"./internal/sqlite",
	"./internal/tickfactory",
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
			self := "github.com/batonhq/baton/" + strings.TrimPrefix(pkg, "./")
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

func listDeps(t *testing.T, root, pkg string) []string {
	t.Helper()
	cmd := exec.Command(goTool(t), "list", "-deps", "-test=false", "-f", "{{.ImportPath}}", pkg)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list -deps %s: %s", pkg, stderr.String())
	return strings.Fields(string(out))
}

func goTool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	_, err := os.Stat(p)
	require.NoError(t, err, "no go tool on PATH or in GOROOT")
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
