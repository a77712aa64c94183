package chaos

import (
	"context"
	"time"

	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
)

// Config says how long a run lasts and how hard it shakes the system.
type Config struct {
	// Seed seeds every random choice of the run (each process derives its
	// own from it); 0 means one from the clock. Goroutines and processes
	// interleave as they will, so a seed reproduces the plan, not the run.
	Seed uint64
	// Ticks is how many ticks of the job are triggered, TickEvery apart.
	Ticks     int
	TickEvery time.Duration
	// Triggers is how many coordinator invocations each tick gets at once.
	Triggers int
	// Duplicates is the share of deliveries handed out twice.
	Duplicates float64
	// ConsumerKills is the share of consumer batches killed at a crash
	// window.
	ConsumerKills float64
	// Poison is the share of poison among the messages; at least one
	// message of each poison kind is sent.
	Poison float64
	// CoordinatorKills is the share of coordinator invocations killed.
	CoordinatorKills float64
	// Replays is the share of ticks forced to a new generation mid-flight.
	Replays float64
	// Consumers is how many consumers run in the test process (each with
	// its own backend connection, owner and clock).
	Consumers int
	// Processes is how many consumers run as operating-system processes,
	// on harnesses that allow it; KillEvery is the mean time between two
	// SIGKILLs of one of them.
	Processes int
	KillEvery time.Duration
	// Settle bounds how long the system is left to settle after the last
	// tick without progress: while runs keep finishing or the queue keeps
	// shrinking the wait goes on, up to four times Settle, so that a
	// loaded machine's slow progress is not taken for a stuck run.
	Settle time.Duration
	// Latency is the processor's simulated provider latency per asset.
	Latency time.Duration
	// Bulk makes the chaos job a bulk job (baton.Job.Bulk): its shard
	// messages are run in place by the consumers, under the same faults
	// and goals.
	Bulk bool
	// Logf, if set, gets the run's progress (a long run's ticks, the
	// settling).
	Logf func(format string, args ...any)

	// Hooks the suite's self-checks break the system with, in the test
	// process's consumers only. nil: none.
	//
	// WrapLedger wraps the consumers' ledger, beneath the journal (the
	// journal sees what the wrapped ledger answers).
	WrapLedger func(ledger.Store) ledger.Store
	// WrapHandle wraps the consumers' batch handler.
	WrapHandle func(HandleFunc) HandleFunc
	// NoDeadLetter takes the dead-letter queue away from the consumers.
	NoDeadLetter bool
	// MissReplays makes every planned mid-run replay miss, as each one can
	// on a loaded machine (the tick's first run opens late, every forced
	// trigger finds the lease held or is killed): the run must still make
	// the superseded case occur rather than report an empty sample.
	MissReplays bool
}

// HandleFunc handles one batch as the consumer does (consumer.Consumer's
// Handle).
type HandleFunc func(ctx context.Context, deadline time.Time, msgs []queue.Delivery) consumer.Result

// Small is the run `go test ./...` makes: a few ticks, seconds.
func Small() Config {
	return Config{
		Ticks:            8,
		TickEvery:        250 * time.Millisecond,
		Triggers:         10,
		Duplicates:       0.20,
		ConsumerKills:    0.05,
		Poison:           0.01,
		CoordinatorKills: 0.10,
		Replays:          0.25,
		Consumers:        3,
		Processes:        2,
		KillEvery:        700 * time.Millisecond,
		// Longer than a killed bulk consumer's shard message stays
		// hidden: its batch deadline (2 s) plus the hand-over's bound
		// (30 s), which its extensions set, come before its redelivery.
		Settle:  40 * time.Second,
		Latency: 10 * time.Millisecond,
	}
}

// Long is the run `make chaos` makes: a few minutes.
func Long() Config {
	c := Small()
	c.Ticks = 150
	c.TickEvery = time.Second
	c.Replays = 0.10
	c.Processes = 3
	c.KillEvery = 2 * time.Second
	c.Settle = time.Minute
	c.Latency = 20 * time.Millisecond
	return c
}
