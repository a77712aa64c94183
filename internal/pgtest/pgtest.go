// Package pgtest starts a throwaway PostgreSQL server for tests, from the
// server binaries of the machine's PostgreSQL installation (Debian's
// postgresql package: pg_config --bindir, or /usr/lib/postgresql/<n>/bin).
//
// The server is started on the first call of DSN in a test binary and is
// shared by every later call; each call creates a fresh database on it, so
// tests never see each other's rows. The cluster lives in a temporary
// directory (initdb with trust authentication, fsync off), listens on a
// free loopback port and on a unix socket in that directory, and is
// removed by Stop. When the test process runs as root the server runs as
// the postgres user (PostgreSQL refuses to run as root).
//
// When the binaries are missing, DSN skips the test with how to install
// them; under CI=true it fails the test instead, so that an environment
// that lost its server cannot pass by skipping.
//
// A test that stops or restarts its server (an immediate stop, as
// 'pg_ctl stop -m immediate', then a start on the same port and cluster)
// starts one of its own with NewServer.
//
// A package whose tests use it stops the server after its tests:
//
//	func TestMain(m *testing.M) { code := m.Run(); pgtest.Stop(); os.Exit(code) }
package pgtest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/tailbuf"
)

// startTimeout bounds initdb plus the server's start.
const startTimeout = 60 * time.Second

// InstallHint says how to get the server binaries.
const InstallHint = "PostgreSQL server binaries not found (initdb, postgres): install them with 'apt-get install postgresql' (Debian/Ubuntu) or put their directory on PATH"

var srv server

// server is a PostgreSQL server: the one shared by a test binary (srv),
// or one a test started for itself (Server).
type server struct {
	once sync.Once
	err  error
	bin  string // the server binaries' directory
	cred *syscall.Credential
	dir  string // the cluster's temporary directory
	port int
	// durable keeps PostgreSQL's default commit durability (synchronous
	// commit), so that a crash loses no acknowledged commit; the shared
	// server trades it for speed.
	durable bool
	cmd     *exec.Cmd
	done    chan struct{} // closed when the server process exited
	logs    *tailbuf.Buffer

	mu      sync.Mutex
	stopped bool
}

// DSN creates a fresh, empty database on the test binary's server (started
// on the first call) and returns its connection string. The database is
// dropped when t ends. It skips t when the server binaries are missing
// (fails it under CI=true) and fails t when the server does not start.
func DSN(t testing.TB) string {
	t.Helper()
	base := ServerDSN(t)
	name := "t_" + strings.ToLower(rand.Text()[:16])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := exec1(ctx, base, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		srv.mu.Lock()
		stopped := srv.stopped
		srv.mu.Unlock()
		if stopped {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// WITH (FORCE) ends connections a test left open (pools closed late).
		_ = exec1(ctx, base, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return dsnFor(srv.port, name)
}

// ServerDSN returns the connection string of the server's maintenance
// database (postgres), starting the server if needed. Skips and failures
// as DSN. Tests that need isolation use DSN.
func ServerDSN(t testing.TB) string {
	t.Helper()
	bin, err := BinDir()
	if err != nil {
		unavailable(t, err.Error())
	}
	srv.once.Do(func() { srv.err = srv.start(bin) })
	if srv.err != nil {
		t.Fatalf("start PostgreSQL: %v", srv.err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.stopped {
		t.Fatal("PostgreSQL test server: stopped")
	}
	return dsnFor(srv.port, "postgres")
}

// Stop stops the server this test binary started, if any, and removes its
// directory. Later calls of DSN fail their test.
func Stop() { srv.stop() }

func dsnFor(port int, db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", port, db)
}

func exec1(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

// unavailable skips t, or fails it under CI, where a skip would hide an
// environment that lost its server.
func unavailable(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(reason + " (CI=true: PostgreSQL tests must run)")
	}
	t.Skip(reason)
}

// BinDir returns the directory of the server binaries: that of initdb on
// PATH, else pg_config --bindir, else the newest /usr/lib/postgresql/<n>/bin.
// Its error is InstallHint.
func BinDir() (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres"} {
			if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
				return false
			}
		}
		return true
	}
	if p, err := exec.LookPath("initdb"); err == nil && has(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); has(dir) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, dir := range dirs {
		if has(dir) {
			return dir, nil
		}
	}
	return "", errors.New(InstallHint)
}

func version(bindir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(bindir)))
	return n
}

// runAs returns the credential the server runs with: the postgres user's
// when this process is root (PostgreSQL refuses root), nil otherwise.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and PostgreSQL refuses to: no postgres user to run it as (%v)", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (s *server) start(bin string) error {
	cred, err := runAs()
	if err != nil {
		return err
	}
	s.bin, s.cred = bin, cred
	// /tmp rather than TMPDIR: the postgres user must reach the directory,
	// and a unix socket path must stay short.
	parent := os.TempDir()
	if cred != nil {
		parent = "/tmp"
	}
	dir, err := os.MkdirTemp(parent, "baton-pg-")
	if err != nil {
		return err
	}
	s.dir = dir
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", s.data(), "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		s.removeDir()
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		s.removeDir()
		return err
	}
	s.port = port
	if err := s.launch(); err != nil {
		s.stop()
		return err
	}
	return nil
}

func (s *server) data() string { return filepath.Join(s.dir, "data") }

// launch starts the postgres process on the cluster and port start made
// (again, after a crash: it then recovers from its write-ahead log) and
// waits until it answers.
func (s *server) launch() error {
	args := []string{"-D", s.data(), "-p", strconv.Itoa(s.port), "-k", s.dir, "-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=300", "-c", "shared_buffers=64MB"}
	if !s.durable {
		args = append(args, "-c", "synchronous_commit=off")
	}
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), args...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = procAttr(s.cred)
	s.logs = tailbuf.New(8 << 10)
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	done := make(chan struct{})
	s.cmd, s.done = cmd, done
	go func() { _ = cmd.Wait(); close(done) }()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		if err := exec1(ctx, dsnFor(s.port, "postgres"), "SELECT 1"); err == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("postgres exited at start:\n%s", s.logs.String())
		case <-ctx.Done():
			return fmt.Errorf("postgres not ready within %s:\n%s", startTimeout, s.logs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freePort returns a loopback port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.stopped = true
	s.halt(syscall.SIGINT)
	s.removeDir()
}

// halt signals the server process, if it runs, and waits for it to exit:
// SIGINT is PostgreSQL's fast shutdown (it ends the sessions and exits
// cleanly), SIGQUIT its immediate shutdown (what 'pg_ctl stop -m
// immediate' sends: every process exits at once, and the next start
// recovers from the write-ahead log). SIGKILL after a while if it does
// not exit.
func (s *server) halt(sig syscall.Signal) {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		kill(s.cmd)
		<-s.done
	}
}

func (s *server) removeDir() {
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}
