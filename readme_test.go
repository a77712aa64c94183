package baton_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readmeFiles returns the user module of the README and the guides (see
// moduleFiles): the README's job and CLI, the guides' Lambda bootstrap
// and jobs.
func readmeFiles(t *testing.T) map[string]string {
	t.Helper()
	files := moduleFiles(t)
	for _, path := range []string{"quotes.go", "cmd/quotes/main.go", "lambda/main.go"} {
		require.Contains(t, files, path, "the README's module")
	}
	readme := map[string]bool{}
	for _, b := range goBlocks(t) {
		if b.doc == "README.md" {
			readme[b.file] = true
		}
	}
	for _, path := range []string{"quotes.go", "cmd/quotes/main.go"} {
		require.True(t, readme[path], "the README shows %s", path)
	}
	return files
}

// userTemplate is the part of a user's template the schedule check reads.
const userTemplate = `
Resources:
  CoordinatorFunction:
    Type: AWS::Serverless::Function
    Properties:
      Environment:
        Variables:
          BATON_FUNCTION: coordinator
      Events:
        Quotes:
          Type: ScheduleV2
          Properties:
            ScheduleExpression: %s
            Input: '{"job": "quotes", "scheduledTime": "<aws.scheduler.scheduled-time>"}'
`

// TestReadmeModule is a user's module, taken from the README and the
// guides as written:
// its own go.mod (baton replaced by this checkout), its own job and
// processor. It runs one tick end to end on the embedded store with its
// own CLI, checks its own template, and builds its Lambda bootstrap for
// linux/arm64 without cgo, which links no SQLite driver.
func TestReadmeModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module: not in -short")
	}
	t.Parallel()
	checkout, err := filepath.Abs(".")
	require.NoError(t, err)
	dir := t.TempDir()
	for path, src := range readmeFiles(t) {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(path)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, path), []byte(src), 0o644))
	}
	// The checkout's go.sum holds every sum the module needs: no lookup
	// beyond the module cache and the proxy.
	sum, err := os.ReadFile("go.sum")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644))
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	run := func(env []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
		return string(out)
	}
	goVersion := strings.TrimPrefix(runtime.Version(), "go")
	run(env, "go", "mod", "init", "example.com/quotes")
	run(env, "go", "mod", "edit", "-go="+goVersion, "-require=github.com/batonhq/baton@v0.0.0", "-replace=github.com/batonhq/baton="+checkout)
	run(env, "go", "mod", "tidy")
	run(env, "go", "vet", "./...")

	cli := filepath.Join(dir, "bin", "quotes")
	run(env, "go", "build", "-o", cli, "./cmd/quotes")
	store := filepath.Join(dir, "var", "quotes.db")
	out := run(env, cli, "run", "--once", "--store", store, "--timeout", "1m")
	require.Contains(t, out, "job quotes, tick ")
	for _, item := range []string{"AAPL", "MSFT", "GOOG", "INDEX"} {
		require.Regexp(t, `(?m)^`+item+`\s+SUCCEEDED\s+1\s`, out)
	}
	require.Contains(t, out, "4 succeeded, 0 dead, 0 cancelled")
	out = run(env, cli, "status", "--store", store)
	require.Contains(t, out, "quotes")
	require.Contains(t, run(env, cli, "version"), "baton ")

	// The binary names itself: a catalog of one job, an unknown --job.
	cmd := exec.Command(cli, "status", "--store", store, "--job", "nope")
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.Error(t, cmd.Run())
	require.Equal(t, 2, cmd.ProcessState.ExitCode())
	require.Empty(t, stdout.String())
	require.True(t, strings.HasPrefix(stderr.String(), `quotes status: unknown job "nope" (known: quotes)`), stderr.String())
	help := run(env, cli, "status", "--help")
	require.Contains(t, help, "Usage:\n  quotes status")
	require.NotRegexp(t, `\bbaton (status|replay|dlq|run)\b`, help)

	// The user's template against the user's catalog, and a drifted one.
	tpl := filepath.Join(dir, "template.yaml")
	require.NoError(t, os.WriteFile(tpl, []byte(strings.Replace(userTemplate, "%s", "rate(5 minutes)", 1)), 0o644))
	require.Contains(t, run(env, cli, "template", "check", "--template", tpl), "every job of the catalog is scheduled")
	require.NoError(t, os.WriteFile(tpl, []byte(strings.Replace(userTemplate, "%s", "rate(1 minute)", 1)), 0o644))
	cmd = exec.Command(cli, "template", "check", "--template", tpl)
	cmd.Dir, cmd.Env = dir, env
	drift, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(drift), `job quotes: the template's schedule CoordinatorFunction.Quotes is "rate(1 minute)", the job's is "rate(5 minutes)"`)

	// The Lambda bootstrap: linux/arm64, no cgo, no SQLite.
	lambdaEnv := append(env, "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	run(lambdaEnv, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", filepath.Join(dir, "bootstrap"), "./lambda")
	deps := run(lambdaEnv, "go", "list", "-deps", "./lambda")
	require.NotContains(t, deps, "sqlite")
	require.Contains(t, deps, "github.com/batonhq/baton/batonlambda")

	// A mistake in a job is an error that names it, from NewCatalog, not
	// a panic: the same module with a bad schedule.
	files := readmeFiles(t)
	for path, src := range files {
		require.NotContains(t, src, "MustCatalog", "%s: the README's module handles catalog errors", path)
	}
	broken := strings.Replace(files["quotes.go"], `Schedule:  "rate(5 minutes)"`, `Schedule:  "rate(0 minutes)"`, 1)
	require.NotEqual(t, files["quotes.go"], broken, "the job's schedule line")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "quotes.go"), []byte(broken), 0o644))
	bad := filepath.Join(dir, "bin", "quotes-broken")
	run(env, "go", "build", "-o", bad, "./cmd/quotes")
	cmd = exec.Command(bad, "status")
	cmd.Dir, cmd.Env = dir, env
	out2, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Equal(t, 2, cmd.ProcessState.ExitCode(), "%s", out2)
	require.True(t, strings.HasPrefix(string(out2), "quotes: catalog: job quotes: "), "%s", out2)
	require.Contains(t, string(out2), "rate(0 minutes)")
	require.NotContains(t, string(out2), "goroutine ")
	require.NotContains(t, string(out2), "panic")
}
