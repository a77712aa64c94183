package cli

// The engines --backend names in these tests, as batoncli links them: the
// command line opens them through the registry only.
import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	_ "github.com/batonhq/baton/engines/aws"
	_ "github.com/batonhq/baton/engines/postgres"
	_ "github.com/batonhq/baton/engines/sqlite"
	"github.com/batonhq/baton/internal/awssqs"
)

// --receive-wait's bound is SQS's longest long poll.
func TestMaxReceiveWaitIsSQSs(t *testing.T) {
	t.Parallel()
	require.Equal(t, awssqs.MaxWait, maxReceiveWait)
}

// --backend takes an engine's URL, or a SQLite file's path, as well as its
// name; setup takes the same names, and an unknown one lists the engines
// the binary links.
func TestBackendByURL(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	url := "sqlite://" + filepath.ToSlash(path)
	code, _, errOut := runMain(t, "status", "--backend", url)
	require.Equal(t, ExitUsage, code, errOut)
	require.Contains(t, errOut, path+": no store there", "a reading command creates nothing")
	require.NoFileExists(t, path)

	code, out, errOut := runMain(t, "run", "--once", "--backend", url, "--consumers", "2")
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, out, "store "+path)
	require.FileExists(t, path)
	code, out, errOut = runMain(t, "status", "--backend", path)
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "complete")

	code, _, errOut = runMain(t, "setup", "--backend", "sqlite")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, `"sqlite" cannot be set up`)
	code, _, errOut = runMain(t, "setup", "--backend", "oracle")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, `--backend: unknown engine "oracle" (engines: aws, postgres, sqlite;`)
}
