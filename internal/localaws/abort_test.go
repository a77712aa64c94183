package localaws

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAbortedRequestLeavesServerUp: a client that dies mid-request (a
// consumer process SIGKILLed by the chaos suite, a cancelled context)
// resets its connection; the server must go on answering everyone else.
// dynalite throws on such a request, and the launcher used to exit on it.
func TestAbortedRequestLeavesServerUp(t *testing.T) {
	t.Parallel()
	for _, proto := range []*server{dynamoDB, sqsServer} {
		t.Run(proto.service, func(t *testing.T) {
			t.Parallel()
			dir, reason := proto.installed()
			if reason != "" {
				unavailable(t, reason)
			}
			s := &server{service: proto.service, pkg: proto.pkg} // its own process: this one is hurt on purpose
			ep, err := s.start(dir)
			require.NoError(t, err)
			t.Cleanup(s.stop)
			addr := strings.TrimPrefix(ep.URL, "http://")

			for range 3 {
				c, err := net.Dial("tcp", addr)
				require.NoError(t, err)
				_, err = c.Write([]byte("POST / HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/x-amz-json-1.0\r\n" +
					"X-Amz-Target: DynamoDB_20120810.ListTables\r\nContent-Length: 1000\r\n\r\n{\"Limit\":"))
				require.NoError(t, err)
				time.Sleep(50 * time.Millisecond) // the server has read the head and waits for the body
				require.NoError(t, c.(*net.TCPConn).SetLinger(0))
				require.NoError(t, c.Close()) // a reset, as from a killed process
			}

			time.Sleep(300 * time.Millisecond) // the resets reach the server, which must survive them
			resp, err := http.Get(ep.URL)
			require.NoError(t, err, "the %s emulator stopped answering after a client aborted a request", s.pkg)
			_ = resp.Body.Close()
		})
	}
}
