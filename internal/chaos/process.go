package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// workerEnv carries a consumer process's workerConfig (JSON). A test
// binary whose TestMain calls WorkerMain becomes a consumer process when
// it is set.
const workerEnv = "BATON_CHAOS_WORKER"

// processPrefix begins the owner (and journal) name of every consumer
// process.
const processPrefix = "process-"

// workerConfig is what a consumer process is told.
type workerConfig struct {
	Harness    string        `json:"harness"`
	Spec       Spec          `json:"spec"`
	JournalDir string        `json:"journal_dir"`
	Owner      string        `json:"owner"`
	Seed       uint64        `json:"seed"`
	Skew       time.Duration `json:"skew"`
	Latency    time.Duration `json:"latency"`
	Bulk       bool          `json:"bulk"`
	Duplicates float64       `json:"duplicates"`
	Kills      float64       `json:"kills"`
	// CalmFile, once it exists, stops the injection (the run settles).
	CalmFile string `json:"calm_file"`
}

// WorkerMain makes the process a consumer process when the suite started
// it as one, and then never returns; otherwise it returns at once. Call it
// first in the TestMain of the package that runs the suite, with the
// harnesses the suite runs.
//
// A consumer process runs until SIGKILL (the suite's), SIGTERM, or the end
// of its standard input (its parent is gone).
func WorkerMain(harnesses []Harness) {
	v := os.Getenv(workerEnv)
	if v == "" {
		return
	}
	if err := work(v, harnesses); err != nil {
		fmt.Fprintln(os.Stderr, "chaos consumer process:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func work(v string, harnesses []Harness) error {
	var wc workerConfig
	if err := json.Unmarshal([]byte(v), &wc); err != nil {
		return fmt.Errorf("%s: %w", workerEnv, err)
	}
	var h *Harness
	for i := range harnesses {
		if harnesses[i].Name == wc.Harness {
			h = &harnesses[i]
		}
	}
	if h == nil {
		return fmt.Errorf("no harness %q", wc.Harness)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // the parent holds our stdin: its end is the parent's
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	j, err := OpenJournal(wc.JournalDir, wc.Owner)
	if err != nil {
		return err
	}
	defer j.Close()
	b, err := h.Open(ctx, wc.Spec)
	if err != nil {
		return err
	}
	defer b.Close()
	var calm sync.Once
	calmed := make(chan struct{})
	go func() {
		for ctx.Err() == nil {
			if _, err := os.Stat(wc.CalmFile); err == nil {
				calm.Do(func() { close(calmed) })
				return
			}
			_ = sleep(ctx, 50*time.Millisecond)
		}
	}()
	return runConsumer(ctx, b, consumerOptions{
		Owner: wc.Owner, Journal: j, Latency: wc.Latency, Bulk: wc.Bulk, Skew: wc.Skew, Seed: wc.Seed,
		Duplicates: wc.Duplicates, Kills: wc.Kills,
		Calm: func() bool {
			select {
			case <-calmed:
				return true
			default:
				return false
			}
		},
	})
}

// processes are the consumer processes of a run: started, SIGKILLed at
// random moments and restarted.
type processes struct {
	base    workerConfig // Owner, Seed and Skew are set per start
	logDir  string
	dice    *dice
	skew    func() time.Duration
	mu      sync.Mutex
	procs   []*process
	starts  int
	kills   int
	crashes []string // consumer processes that exited by themselves
	stopped bool
}

type process struct {
	cmd    *exec.Cmd
	stdin  io.Closer
	log    *os.File
	done   chan struct{}
	killed atomic.Bool // by the suite: any other exit is a crash
}

// start starts consumer process i (again).
func (ps *processes) start(i int) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.stopped {
		return nil
	}
	ps.starts++
	wc := ps.base
	wc.Owner = fmt.Sprintf("%s%d.%d", processPrefix, i, ps.starts)
	wc.Seed = ps.base.Seed + uint64(ps.starts)*7919
	wc.Skew = ps.skew()
	cfg, err := json.Marshal(wc)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(ps.logDir, wc.Owner+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"="+string(cfg))
	cmd.Stdout, cmd.Stderr = log, log
	configure(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		log.Close()
		return err
	}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start consumer process: %w", err)
	}
	p := &process{cmd: cmd, stdin: stdin, log: log, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		log.Close()
		if !p.killed.Load() {
			ps.crashed(wc.Owner, err, log.Name())
		}
		close(p.done)
	}()
	for len(ps.procs) <= i {
		ps.procs = append(ps.procs, nil)
	}
	ps.procs[i] = p
	return nil
}

// kill SIGKILLs process i and waits for it to die.
func (ps *processes) kill(i int) {
	ps.mu.Lock()
	p := ps.procs[i]
	ps.mu.Unlock()
	if p == nil {
		return
	}
	p.killed.Store(true)
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	_ = p.stdin.Close()
}

// killLoop SIGKILLs a random process about every `every` and restarts it,
// until ctx ends.
func (ps *processes) killLoop(ctx context.Context, every time.Duration) {
	for {
		if sleep(ctx, ps.dice.durationIn(every/2, every*3/2)) != nil {
			return
		}
		ps.mu.Lock()
		n := len(ps.procs)
		ps.mu.Unlock()
		i := ps.dice.intN(n)
		ps.kill(i)
		ps.mu.Lock()
		ps.kills++
		ps.mu.Unlock()
		_ = ps.start(i)
	}
}

// stop SIGKILLs every process; none starts again.
func (ps *processes) stop() {
	ps.mu.Lock()
	ps.stopped = true
	n := len(ps.procs)
	ps.mu.Unlock()
	for i := range n {
		ps.kill(i)
	}
}

// crashed records that a consumer process exited by itself.
func (ps *processes) crashed(owner string, err error, logName string) {
	out, _ := os.ReadFile(logName)
	if len(out) > 2048 {
		out = out[len(out)-2048:]
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.crashes = append(ps.crashes, fmt.Sprintf("%s exited by itself (%v); its output ends with:\n%s", owner, err, out))
}

// crashReports returns what crashed records.
func (ps *processes) crashReports() []string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return append([]string(nil), ps.crashes...)
}

func (ps *processes) killCount() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.kills
}
