// Package suitecheck proves that a conformance suite can fail. A suite's
// cases take *testing.T, so a case failing against a deliberately broken
// store fails the whole test binary: RequireCaught re-runs the test binary
// in a child process once per broken store and requires the named cases
// to fail there, with a failed case rather than a crash.
//
// A suite's test file pairs two tests:
//
//	func TestSuiteFindsBrokenStores(t *testing.T) {
//		suitecheck.RequireCaught(t, "TestBrokenStore", map[string][]string{"unconditional put": {"Fencing"}})
//	}
//
//	func TestBrokenStore(t *testing.T) {
//		name := suitecheck.Broken(t) // skips outside the child process
//		Run(t, Harness{NewStoreFunc: brokenStores[name]})
//	}
package suitecheck

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// env names, in a child process, the broken store it runs against.
const env = "BATON_SUITECHECK_BROKEN_STORE"

// RequireCaught runs the test child (a test of the same binary that runs
// the suite against the store Broken names) once per broken store, in
// parallel, and requires each run to fail, with every case of caughtBy
// failing. It is skipped in the child processes themselves.
func RequireCaught(t *testing.T, child string, caughtBy map[string][]string) {
	t.Helper()
	if os.Getenv(env) != "" {
		t.Skip("in a child process")
	}
	for name, cases := range caughtBy {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+child+"$", "-test.v", "-test.count=1", "-test.timeout=2m")
			cmd.Env = append(os.Environ(), env+"="+name)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "the suite passed a broken store:\n%s", out)
			for _, c := range cases {
				require.Contains(t, string(out), "--- FAIL: "+child+"/"+c+" (", "case %s did not catch it:\n%s", c, out)
			}
			require.NotContains(t, string(out), "panic:", "a failed case, not a crash")
		})
	}
}

// Broken returns the name of the broken store this child process runs
// against, and skips the test outside a child process.
func Broken(t *testing.T) string {
	t.Helper()
	name := os.Getenv(env)
	if name == "" {
		t.Skip("run by RequireCaught")
	}
	return name
}
