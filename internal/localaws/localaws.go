package localaws

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/batonhq/baton/internal/tailbuf"
)

// Region is the region every emulator endpoint reports; ARNs the servers
// mint use it too.
const Region = "us-east-1"

// AccountID is the account the SQS server puts in queue URLs and ARNs.
const AccountID = "123456789012"

// startTimeout bounds the start of one server, from exec to first answer.
const startTimeout = 30 * time.Second

// Endpoint is where a running server answers and how to sign requests to it.
type Endpoint struct {
	URL         string                  // base URL, http://127.0.0.1:<port>
	Region      string                  // always Region
	Credentials aws.CredentialsProvider // static dummy keys; the servers check none
}

// Config is an aws.Config for the endpoint: its region, credentials and
// BaseEndpoint. Service clients built from it with NewFromConfig talk to the
// server and read nothing from the environment.
func (e Endpoint) Config() aws.Config {
	return aws.Config{
		Region:       e.Region,
		Credentials:  e.Credentials,
		BaseEndpoint: aws.String(e.URL),
	}
}

// DynamoDB returns the endpoint of a dynalite server (in memory), started on
// the first call in the test binary and shared by every later call. It skips
// the test when Node.js or infra/local/node_modules is missing, fails it
// instead when CI=true, and fails it when the server does not start.
func DynamoDB(t testing.TB) Endpoint {
	t.Helper()
	return dynamoDB.endpoint(t)
}

// SQS returns the endpoint of a local-aws-sqs server, started on the first
// call in the test binary and shared by every later call. Tests must name
// their queues uniquely. Skips and failures as DynamoDB.
func SQS(t testing.TB) Endpoint {
	t.Helper()
	return sqsServer.endpoint(t)
}

// Stop kills the servers this test binary started. The servers die with the
// test process anyway (a parent-death signal on Linux, end of file on their
// stdin elsewhere); Stop is for a TestMain that wants them gone earlier:
//
//	func TestMain(m *testing.M) { code := m.Run(); localaws.Stop(); os.Exit(code) }
//
// Endpoints returned before Stop stop answering; later calls to DynamoDB or
// SQS fail the test.
func Stop() {
	dynamoDB.stop()
	sqsServer.stop()
}

var (
	dynamoDB  = &server{service: "dynamodb", pkg: "dynalite"}
	sqsServer = &server{service: "sqs", pkg: "local-aws-sqs"}
)

// server is one emulator process, started at most once per test binary.
type server struct {
	service string // the launcher's name for it
	pkg     string // the npm package that implements it

	once sync.Once
	ep   Endpoint
	err  error

	mu      sync.Mutex
	cmd     *exec.Cmd
	stdin   io.Closer
	stopped bool
}

func (s *server) endpoint(t testing.TB) Endpoint {
	t.Helper()
	dir, reason := s.installed()
	if reason != "" {
		unavailable(t, reason)
	}
	s.once.Do(func() { s.ep, s.err = s.start(dir) })
	if s.err != nil {
		t.Fatalf("start %s emulator: %v", s.pkg, s.err)
	}
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if stopped {
		t.Fatalf("%s emulator: stopped", s.pkg)
	}
	return s.ep
}

// installed returns the launcher directory, or why the server cannot run here.
func (s *server) installed() (dir, reason string) {
	hint := fmt.Sprintf("%s not installed: run 'make test' (it runs npm ci in infra/local)", s.pkg)
	root, err := moduleRoot()
	if err != nil {
		return "", fmt.Sprintf("%s: %v", hint, err)
	}
	dir = localDir(root)
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Sprintf("%s not runnable: node is not on PATH (Node.js 20 or later is needed)", s.pkg)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", s.pkg, "package.json")); err != nil {
		return "", hint
	}
	return dir, ""
}

// unavailable skips the test, or fails it under CI where a skip would hide
// an environment that lost its emulators.
func unavailable(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(reason + " (CI=true: emulator tests must run)")
	}
	t.Skip(reason)
}

func (s *server) start(dir string) (Endpoint, error) {
	cmd := exec.Command("node", "start.js", s.service, "--host", "127.0.0.1", "--port", "0", "--exit-with-stdin")
	cmd.Dir = dir
	configure(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Endpoint{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Endpoint{}, err
	}
	stderr := tailbuf.New(8 << 10)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return Endpoint{}, fmt.Errorf("run node start.js %s: %w", s.service, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "ready ") {
				select {
				case ready <- line:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()

	fail := func(err error) (Endpoint, error) {
		kill(cmd)
		_ = stdin.Close()
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			err = fmt.Errorf("%w\nstderr:\n%s", err, msg)
		}
		return Endpoint{}, err
	}
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	var url string
	select {
	case line := <-ready:
		f := strings.Fields(line)
		if len(f) != 3 || f[1] != s.service {
			return fail(fmt.Errorf("unexpected ready line %q", line))
		}
		url = f[2]
	case err := <-exited:
		return fail(fmt.Errorf("exited before ready: %v", err))
	case <-deadline.C:
		return fail(fmt.Errorf("not ready after %s", startTimeout))
	}

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := waitAnswer(ctx, url); err != nil {
		return fail(err)
	}

	s.mu.Lock()
	s.cmd, s.stdin = cmd, stdin
	s.mu.Unlock()
	go s.watch(exited, stderr)
	return Endpoint{
		URL:         url,
		Region:      Region,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDLOCALEMULATOR", "local-emulator-secret", ""),
	}, nil
}

// watch reports on the test binary's standard error when the server dies
// before Stop, with the end of what it wrote to its own: every later call
// to it fails with "connection refused", which says nothing of why.
func (s *server) watch(exited <-chan error, stderr fmt.Stringer) {
	err := <-exited
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if stopped {
		return
	}
	fmt.Fprintf(os.Stderr, "localaws: the %s emulator exited while tests used it (%v); its standard error ends with:\n%s\n",
		s.pkg, err, strings.TrimSpace(stderr.String()))
}

// waitAnswer polls url until the server returns any HTTP response.
func waitAnswer(ctx context.Context, url string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no answer from %s: %w", url, errors.Join(err, ctx.Err()))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.stopped {
		return
	}
	s.stopped = true
	kill(s.cmd)
	_ = s.stdin.Close()
}
