package pgtest

import (
	"context"
	"crypto/rand"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Server is a PostgreSQL server of one test's own, for a test that stops
// or restarts it (the shared server of DSN must stay up for the others).
// It keeps PostgreSQL's default commit durability (synchronous commit),
// so that a crash loses no commit a client saw acknowledged, as on a
// production server; fsync stays off, as the machine itself does not
// crash. It is stopped and its directory removed when the test ends.
type Server struct {
	s *server
}

// NewServer starts a server of t's own. It skips t when the server
// binaries are missing (fails it under CI=true) and fails t when the
// server does not start.
func NewServer(t testing.TB) *Server {
	t.Helper()
	bin, err := BinDir()
	if err != nil {
		unavailable(t, err.Error())
	}
	s := &server{durable: true}
	if err := s.start(bin); err != nil {
		t.Fatalf("start PostgreSQL: %v", err)
	}
	t.Cleanup(s.stop)
	return &Server{s: s}
}

// DSN creates a fresh, empty database on the server and returns its
// connection string (the server must be running).
func (v *Server) DSN(t testing.TB) string {
	t.Helper()
	name := "t_" + strings.ToLower(rand.Text()[:16])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := exec1(ctx, dsnFor(v.s.port, "postgres"), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	return dsnFor(v.s.port, name)
}

// Crash stops the server as 'pg_ctl stop -m immediate' does: every server
// process exits at once, sessions are cut without a goodbye, and
// transactions not committed are lost (the next start recovers the
// committed ones from the write-ahead log). Until Start, connections are
// refused.
func (v *Server) Crash(t testing.TB) {
	t.Helper()
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	cmd := exec.Command(filepath.Join(v.s.bin, "pg_ctl"), "stop", "-D", v.s.data(), "-m", "immediate", "-w", "-t", "20")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: v.s.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		// pg_ctl could not do it (no postmaster.pid yet): the same signal.
		t.Logf("pg_ctl stop -m immediate: %v\n%s", err, out)
		v.s.halt(syscall.SIGQUIT)
	}
	select {
	case <-v.s.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("PostgreSQL still running after an immediate stop")
	}
}

// Start starts the server again after Crash, on the same port and
// cluster, and waits until it answers.
func (v *Server) Start(t testing.TB) {
	t.Helper()
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	if v.s.stopped {
		t.Fatal("PostgreSQL test server: stopped")
	}
	if err := v.s.launch(); err != nil {
		t.Fatalf("restart PostgreSQL: %v", err)
	}
}

// Restart is Crash, down for d, then Start.
func (v *Server) Restart(t testing.TB, d time.Duration) {
	t.Helper()
	v.Crash(t)
	time.Sleep(d)
	v.Start(t)
}

// String names the server for messages.
func (v *Server) String() string { return fmt.Sprintf("PostgreSQL on 127.0.0.1:%d", v.s.port) }
