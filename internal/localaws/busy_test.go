package localaws

import (
	"bytes"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBusyPortIsOneLine: started by hand on a port that is taken, each
// server says so in one line (no stack trace) and exits with status 1.
func TestBusyPortIsOneLine(t *testing.T) {
	t.Parallel()
	for _, s := range []*server{dynamoDB, sqsServer} {
		t.Run(s.service, func(t *testing.T) {
			t.Parallel()
			dir, reason := s.installed()
			if reason != "" {
				unavailable(t, reason)
			}
			l, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer l.Close()
			port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
			cmd := exec.CommandContext(t.Context(), "node", "start.js", s.service, "--port", port)
			cmd.Dir = dir
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err = cmd.Run()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "%v", err)
			require.Equal(t, 1, exit.ExitCode())
			require.Empty(t, stdout.String())
			require.Equal(t, 1, strings.Count(stderr.String(), "\n"), stderr.String())
			require.Contains(t, stderr.String(), "127.0.0.1:"+port+" is busy")
		})
	}
}
