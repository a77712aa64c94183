package bench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// Config sizes the scenarios.
type Config struct {
	// Contenders are the lease contender counts (scenario 2).
	Contenders []int
	// Window is how long each lease measurement runs, per round; Rounds
	// alternate the baton and raw measurements so that a change of load
	// on the machine affects both.
	Window time.Duration
	Rounds int
	// BackoffRounds is how many rounds of the contenders retrying with
	// backoff alternate the contender counts, each count BackoffWindow
	// long (0: Window); their rates are the medians of the rounds.
	BackoffRounds int
	BackoffWindow time.Duration
	// FanOutItems is the size of the fan-out (scenario 3), FanOutRounds
	// how many times raw sends and the coordinator alternate (the best of
	// each is kept).
	FanOutItems  int
	FanOutRounds int
	// IdleSamples is the number of one-item samples of scenario 7's idle
	// to done, per system.
	IdleSamples int
	// EndToEndItems and EndToEndConsumers size scenario 4.
	EndToEndItems     int
	EndToEndConsumers int
	// Latency is the reference job's simulated provider latency
	// (scenario 5).
	Latency time.Duration
	// WideAssets, WideLatency and WideConsumers size the second freshness
	// scenario: that many assets, each taking WideLatency, with
	// WideConsumers items processed at once.
	WideAssets    int
	WideLatency   time.Duration
	WideConsumers int
	// ScaleSQLite are the run sizes of the scale scenario (8) on the
	// embedded store, the smallest first; ScaleAWS on the emulators,
	// with ScaleAWSConsumers batches handled at once; ScaleContrast is
	// the size of the run kept in one partition key on the emulators, to
	// show the throttling the partitions avoid (0: none).
	ScaleSQLite []int
	ScaleAWS    []int
	// ScaleSQLiteRunTime and ScaleAWSRunTime are the sizes of the same
	// runs of a job whose items are computed when its run opens (a
	// run-time list, with ExpectedItems declared), on the embedded store
	// and on the emulators.
	ScaleSQLiteRunTime []int
	ScaleAWSRunTime    []int
	// ScaleAWSRunTimeShardsPerPartition is the DynamoDB store's
	// ShardsPerPartition in the run-time list runs on the emulators (0:
	// its default); the smoke run sets 1, so that its small list is
	// spread over item partitions too.
	ScaleAWSRunTimeShardsPerPartition int
	ScaleAWSConsumers                 int
	ScaleContrast                     int
	// ScaleLongPoll is the idle consumers' long-poll wait in the scale
	// runs on the emulators (0: the engine's short default), as Lambda's
	// event source mapping long-polls, so that the cost rows count the
	// empty receives a deployment pays. The smoke run keeps the default:
	// a long poll outlives its consumers' stop by up to its wait.
	ScaleLongPoll time.Duration
	// ExpandFrom and ExpandItems are the coordinator's hierarchical
	// fan-out settings in the scale scenario (0: its defaults).
	ExpandFrom, ExpandItems int
	// Contended are the contender counts of the refused-acquisition
	// figures (scenario 10), on the emulators behind the
	// throttling proxy.
	Contended []int
	// Timeout bounds each scenario, ScaleTimeout the scale scenario on
	// each target (0: Timeout).
	Timeout, ScaleTimeout time.Duration
}

// FullConfig is what `make bench` runs: the sizes of the issue.
func FullConfig() Config {
	return Config{
		Contenders:         []int{1, 8, 64},
		Window:             time.Second,
		Rounds:             3,
		BackoffRounds:      40,
		BackoffWindow:      200 * time.Millisecond,
		FanOutItems:        10_000,
		FanOutRounds:       5,
		EndToEndItems:      10_000,
		EndToEndConsumers:  8,
		IdleSamples:        60,
		Latency:            1600 * time.Millisecond,
		WideAssets:         1000,
		WideLatency:        200 * time.Millisecond,
		WideConsumers:      100,
		ScaleSQLite:        []int{10_000, 100_000},
		ScaleSQLiteRunTime: []int{10_000, 100_000, 1_000_000},
		ScaleAWS:           []int{100_000},
		ScaleAWSRunTime:    []int{100_000},
		ScaleAWSConsumers:  100,
		ScaleLongPoll:      20 * time.Second,
		ScaleContrast:      10_000,
		Contended:          []int{8, 64},
		Timeout:            10 * time.Minute,
		ScaleTimeout:       45 * time.Minute,
	}
}

// SmokeConfig runs every scenario at a tiny size, to test the code.
func SmokeConfig() Config {
	return Config{
		Contenders:         []int{1, 4},
		Window:             50 * time.Millisecond,
		Rounds:             1,
		BackoffRounds:      2,
		FanOutItems:        120,
		FanOutRounds:       2,
		EndToEndItems:      60,
		EndToEndConsumers:  2,
		IdleSamples:        3,
		Latency:            20 * time.Millisecond,
		WideAssets:         40,
		WideLatency:        10 * time.Millisecond,
		WideConsumers:      10,
		ScaleSQLite:        []int{150, 300},
		ScaleSQLiteRunTime: []int{150, 300},
		ScaleAWS:           []int{300},
		ScaleAWSRunTime:    []int{300},

		ScaleAWSRunTimeShardsPerPartition: 1,
		ScaleAWSConsumers:                 4,
		ScaleContrast:                     200,
		ExpandFrom:                        100,
		ExpandItems:                       50,
		Contended:                         []int{2},
		Timeout:                           time.Minute,
	}
}

// Runner runs the scenarios on targets and collects the rows.
type Runner struct {
	Config Config
	// Progress receives one line per step; nil discards them.
	Progress io.Writer
	// Prefix makes the Envs' names unique across runs on one server.
	Prefix string
	// SkipFunc, if set, is asked before each scenario on each target; true
	// skips it (to profile one scenario, for instance).
	SkipFunc func(scenario, target string) bool
	// DoneFunc, if set, is called with the rows so far after each
	// scenario on each target (to keep a partial report).
	DoneFunc func(rows []Row)

	seq  int
	rows []Row
}

// Rows returns the rows collected so far.
func (r *Runner) Rows() []Row { return r.rows }

func (r *Runner) add(rows ...Row) { r.rows = append(r.rows, rows...) }

func (r *Runner) logf(format string, args ...any) {
	if r.Progress == nil {
		return
	}
	fmt.Fprintf(r.Progress, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// open returns a fresh Env of t for the scenario.
func (r *Runner) open(ctx context.Context, t Target, scenario string) (*Env, error) {
	r.seq++
	name := fmt.Sprintf("%s%s-%d", r.Prefix, strings.ReplaceAll(scenario, " ", "-"), r.seq)
	env, err := t.OpenFunc(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("%s: open %s: %w", t.Name, scenario, err)
	}
	return env, nil
}

// Scenario is one numbered item of the report.
type Scenario struct {
	Name    string
	RunFunc func(r *Runner, ctx context.Context, t Target) error
}

// Scenarios are the backend scenarios in report order (the Lambda
// artifacts are measured apart: see Lambda).
func Scenarios() []Scenario {
	return []Scenario{
		{"1 calls", (*Runner).calls},
		{"2 lease", (*Runner).lease},
		{"3 fan-out", (*Runner).fanOut},
		{"4 end to end", (*Runner).endToEnd},
		{"5 freshness", (*Runner).freshness},
		{"7 river", (*Runner).river},
		{"8 scale", (*Runner).scale},
	}
}

// Run runs every scenario on every target, scenario by scenario. Targets
// marked CallsOnly run only the first. A failing scenario is reported as a
// row with its error and the others still run; Run returns the errors
// joined.
func (r *Runner) Run(ctx context.Context, targets []Target) error {
	var errs []string
	for _, s := range Scenarios() {
		for _, t := range targets {
			if t.CallsOnly && s.Name != "1 calls" || r.SkipFunc != nil && r.SkipFunc(s.Name, t.Name) {
				continue
			}
			r.logf("%s on %s", s.Name, t.Name)
			timeout := r.Config.Timeout
			if s.Name == "8 scale" && r.Config.ScaleTimeout > 0 {
				timeout = r.Config.ScaleTimeout
			}
			sctx, cancel := context.WithTimeout(ctx, timeout)
			err := s.RunFunc(r, sctx, t)
			cancel()
			if err != nil {
				r.logf("%s on %s FAILED: %v", s.Name, t.Name, err)
				errs = append(errs, fmt.Sprintf("%s on %s: %v", s.Name, t.Name, err))
				r.add(Row{Scenario: s.Name, Backend: t.Name, Figure: "scenario failed", Note: err.Error()})
			}
			if r.DoneFunc != nil {
				r.DoneFunc(r.rows)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d scenarios failed: %s", len(errs), strings.Join(errs, "; "))
	}
	return nil
}
