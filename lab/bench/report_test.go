package bench

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/localaws"
	"github.com/batonhq/baton/internal/pgtest"
)

// pgDatabases makes the PostgreSQL target's databases on the test
// binary's throwaway server.
func pgDatabases(t *testing.T) NewDatabaseFunc {
	return func(context.Context, string) (string, error) { return pgtest.DSN(t), nil }
}

var (
	report    = flag.Bool("report", false, "run the full benchmark report (make bench): progress on stderr, the table on stdout")
	reportOut = flag.String("report.out", "", "with -report: also write the table to this file")
	million   = flag.Bool("million", false, "run the run-time list of 1,000,000 items on the embedded store (make bench-million)")
	only      = flag.String("report.only", "", "with -report: run only the scenarios whose \"<scenario> on <backend>\" matches this regular expression")
	awsItems  = flag.Int("report.scale.aws", 0, "with -report: the size of the scale run on the emulators, whose counts the cost rows price (0: 100,000); the contrast run is then a tenth of it")
)

// tableOut is where the report's table goes: the process's standard
// output. In report mode the test framework's own lines go to standard
// error instead, so that standard output holds the table alone.
var tableOut = os.Stdout

func TestMain(m *testing.M) {
	flag.Parse()
	if *report {
		os.Stdout = os.Stderr
	}
	code := m.Run()
	localaws.Stop()
	pgtest.Stop()
	os.Exit(code)
}

// TestReport is `make bench`: every scenario on both backends at the
// issue's sizes.
func TestReport(t *testing.T) {
	if !*report {
		t.Skip("the full report runs with -report (make bench)")
	}
	progress := os.Stderr
	fmt.Fprintf(progress, "machine: %s\n", Machine())
	ddb, sq := localaws.DynamoDB(t), localaws.SQS(t)
	r := &Runner{Config: FullConfig(), Progress: progress, Prefix: fmt.Sprintf("r%d-", time.Now().Unix()%100000)}
	if *awsItems > 0 {
		r.Config.ScaleAWS, r.Config.ScaleContrast = []int{*awsItems}, max(1, *awsItems/10)
	}
	if *only != "" {
		re := regexp.MustCompile(*only)
		r.SkipFunc = func(scenario, target string) bool { return !re.MatchString(scenario + " on " + target) }
	}
	if *reportOut != "" {
		// The table so far, after every scenario: a long run cut short
		// still leaves its figures.
		r.DoneFunc = func(rows []Row) {
			var buf bytes.Buffer
			if Markdown(&buf, SortRows(rows)) == nil {
				_ = os.WriteFile(*reportOut+".partial", buf.Bytes(), 0o644)
			}
		}
	}
	targets := []Target{
		SQLiteTarget(t.TempDir()),
		PostgresTarget("postgres", pgDatabases(t)),
		AWSTarget("aws (dynalite + local-aws-sqs)", ddb.Config(), sq.Config(), AWSOptions{}),
		AWSTarget("aws, old record on failed condition", ddb.Config(), sq.Config(), AWSOptions{AllOld: true}),
	}
	err := r.Run(t.Context(), targets)
	for _, tg := range targets[:2] {
		if r.SkipFunc != nil && r.SkipFunc("7 rate limit", tg.Name) {
			continue
		}
		r.logf("7 rate limit on %s", tg.Name)
		rows, rerr := RateLimit(t.Context(), tg, 60*time.Second)
		r.add(rows...)
		err = errors.Join(err, rerr)
	}
	for i, tg := range targets[:3] {
		// The DynamoDB emulator serves about 1,200–1,500 calls a second in
		// all: 100 keys of 5/s there.
		keys := []int{1000, 1000, 100}[i]
		if r.SkipFunc != nil && r.SkipFunc("13 keyed limit", tg.Name) {
			continue
		}
		r.logf("13 keyed limit on %s", tg.Name)
		rows, kerr := KeyedLimit(t.Context(), tg, keys, 30*time.Second)
		r.add(rows...)
		err = errors.Join(err, kerr)
	}
	for _, tg := range targets[:3] {
		if r.SkipFunc != nil && r.SkipFunc("14 retry delay", tg.Name) {
			continue
		}
		r.logf("14 retry delay on %s", tg.Name)
		rows, rerr := RetryDelay(t.Context(), tg, 20, 2*time.Second)
		r.add(rows...)
		err = errors.Join(err, rerr)
	}
	// The locks: batonlock against a bare advisory lock on PostgreSQL and
	// against dynamolock's protocol on the DynamoDB emulator.
	for _, tg := range targets[1:3] {
		if r.SkipFunc != nil && r.SkipFunc("15 locks", tg.Name) {
			continue
		}
		r.logf("15 locks on %s", tg.Name)
		rows, lerr := Locks(t.Context(), tg, r.Prefix, FullLockConfig())
		r.add(rows...)
		err = errors.Join(err, lerr)
	}
	for i, tg := range targets[:2] {
		n := []int{100_000, 20_000}[i] // the DynamoDB emulator serves a few hundred writes a second
		if r.SkipFunc != nil && r.SkipFunc(fmt.Sprintf("11 run-time list %d", n), tg.Name) {
			continue
		}
		r.logf("11 run-time list %d on %s", n, tg.Name)
		rows, rerr := RunTimeList(t.Context(), tg, n)
		r.add(rows...)
		err = errors.Join(err, rerr)
	}
	if r.SkipFunc == nil || !r.SkipFunc("12 priority", targets[0].Name) {
		r.logf("12 priority on %s", targets[0].Name)
		rows, perr := Priority(t.Context(), t.TempDir(), 6000, 2000)
		r.add(rows...)
		err = errors.Join(err, perr)
		b, oerr := sqlitebackend.Open(t.Context(), filepath.Join(t.TempDir(), "behind.db"))
		if oerr == nil {
			rows, perr = PriorityBehind(t.Context(), b, targets[0].Name, 2000)
			b.Close()
			r.add(rows...)
		}
		err = errors.Join(err, oerr, perr)
	}
	// PostgreSQL too: its classes share one pool as the embedded store's
	// do. On the emulators the classes are separate SQS queues, each with
	// its own consumers (as the template's event-source mappings weight
	// them by MaximumConcurrency); fewer items there, at the emulators'
	// rate.
	for i, tg := range targets[1:3] {
		if r.SkipFunc != nil && r.SkipFunc("12 priority", tg.Name) {
			continue
		}
		r.logf("12 priority on %s", tg.Name)
		env, oerr := tg.OpenFunc(t.Context(), "priority")
		if oerr != nil {
			err = errors.Join(err, oerr)
			continue
		}
		high, low := []int{1500, 600}[i], []int{500, 200}[i]
		rows, perr := PriorityOn(t.Context(), env.Plain, tg.Name, high, low)
		r.add(rows...)
		err = errors.Join(err, perr)
		rows, perr = PriorityBehind(t.Context(), env.Plain, tg.Name, []int{2000, 400}[i])
		env.Close()
		r.add(rows...)
		err = errors.Join(err, perr)
	}
	if r.SkipFunc == nil || !r.SkipFunc("6 lambda", "lambda") {
		r.logf("6 lambda")
		if lerr := r.Lambda(t.Context(), lambdaParams(t, true)); lerr != nil {
			r.logf("6 lambda FAILED: %v", lerr)
			r.add(Row{Scenario: "6 lambda", Backend: "lambda", Figure: "scenario failed", Note: lerr.Error()})
			err = errors.Join(err, lerr)
		}
	}
	rows := r.Rows()
	fmt.Fprintf(progress, "load after: %s\n", LoadAverage())
	var buf bytes.Buffer
	require.NoError(t, Markdown(&buf, SortRows(rows)))
	_, werr := tableOut.Write(buf.Bytes())
	require.NoError(t, werr)
	if *reportOut != "" {
		require.NoError(t, os.WriteFile(*reportOut, buf.Bytes(), 0o644))
		// The goal lines alone, beside it: BENCHMARKS.md's Goals section.
		var goals bytes.Buffer
		require.NoError(t, GoalsMarkdown(&goals, SortRows(rows)))
		require.NoError(t, os.WriteFile(strings.TrimSuffix(*reportOut, ".md")+"-goals.md", goals.Bytes(), 0o644))
	}
	require.NoError(t, err)
}

// lambdaParams builds in a temporary directory, against the emulators.
func lambdaParams(t *testing.T, arm64 bool) LambdaParams {
	t.Helper()
	root, lab, err := ModuleRoots()
	require.NoError(t, err)
	return LambdaParams{
		ModuleDir: root, LabDir: lab, WorkDir: t.TempDir(),
		DynamoDB: localaws.DynamoDB(t).Config(), SQS: localaws.SQS(t).Config(), Arm64: arm64,
	}
}

// TestSmoke runs every scenario at a tiny size: on SQLite always, on the
// emulators unless -short. It checks that the report is complete, not how
// fast anything is.
func TestSmoke(t *testing.T) {
	if *report {
		t.Skip("report mode")
	}
	t.Parallel()
	targets := []Target{SQLiteTarget(t.TempDir()), PostgresTarget("postgres", pgDatabases(t))}
	if !testing.Short() {
		ddb, sq := localaws.DynamoDB(t), localaws.SQS(t)
		targets = append(targets,
			AWSTarget("aws", ddb.Config(), sq.Config(), AWSOptions{}),
			AWSTarget("aws all-old", ddb.Config(), sq.Config(), AWSOptions{AllOld: true}))
	}
	r := &Runner{Config: SmokeConfig(), Prefix: fmt.Sprintf("s%d-", time.Now().UnixNano()%1e6)}
	require.NoError(t, r.Run(t.Context(), targets))
	if !testing.Short() {
		require.NoError(t, r.Lambda(t.Context(), lambdaParams(t, false)))
	}
	rows := r.Rows()

	for _, tg := range targets {
		var figures []string
		for _, row := range rows {
			if row.Backend != tg.Name && row.Backend != tg.Name+", behind the throttling proxy" {
				continue
			}
			figures = append(figures, row.Scenario)
			require.False(t, math.IsNaN(row.Value) || math.IsNaN(row.Reference), "%s: %+v", tg.Name, row)
			require.NotContains(t, row.Figure, "failed", "%s: %+v", tg.Name, row)
			if row.RefText != "none" && row.RefText != "—" { // a count whose reference is nothing at all
				require.Positive(t, row.Reference, "%s: %+v", tg.Name, row)
			}
		}
		if tg.CallsOnly {
			require.Equal(t, []string{"1 calls"}, slices.Compact(figures))
			continue
		}
		slices.Sort(figures)
		want := []string{"1 calls", "2 lease", "3 fan-out", "4 end to end", "5 freshness"}
		if tg.River {
			want = append(want, "7 river")
		}
		if tg.Name == "sqlite" {
			want = append(want, "8 scale")
		}
		if strings.HasPrefix(tg.Name, "aws") {
			want = append(want, "8 scale", "9 cost", "10 contended")
		}
		slices.Sort(want)
		require.Equal(t, want, slices.Compact(figures), tg.Name)
	}
	if !testing.Short() {
		n := 0
		for _, row := range rows {
			if row.Scenario == "6 lambda" {
				n++
				require.Positive(t, row.Reference, "%+v", row)
				if strings.Contains(row.Figure, "cold share") {
					// A difference of two medians: negative when the warm
					// batch happened to wait longer on the machine.
					require.False(t, math.IsNaN(row.Value) || math.IsInf(row.Value, 0), "%+v", row)
					continue
				}
				require.Positive(t, row.Value, "%+v", row)
			}
		}
		require.Equal(t, 2+9, n, "host sizes of both functions and nine start-up figures")
	}
	// The call counts are exact whatever the machine: check the SQLite
	// ones, and the contended acquire where the server returns the old
	// record.
	calls := map[string]map[string]float64{}
	for _, row := range rows {
		if row.Scenario == "1 calls" {
			if calls[row.Backend] == nil {
				calls[row.Backend] = map[string]float64{}
			}
			calls[row.Backend][row.Figure] = row.Value
		}
	}
	sq := calls["sqlite"]
	require.Equal(t, 1.0, sq["lease acquire, free"])
	require.Equal(t, 1.0, sq["lease acquire, contended (lease port)"])
	require.Equal(t, 2.0, sq["lease acquire, contended, as shipped (lease port + contention record)"])
	require.Equal(t, 4.0, sq["item new (consumer: vouch, claim, process, complete, settle)"])
	require.Equal(t, 2.0, sq["item duplicate (consumer: delivery of a SUCCEEDED item)"])
	// PostgreSQL: the same minimum, the refused acquisition's holder
	// coming back in the same round trip.
	pg := calls["postgres"]
	require.Equal(t, 1.0, pg["lease acquire, free"])
	require.Equal(t, 1.0, pg["lease acquire, contended (lease port)"])
	require.Equal(t, 4.0, pg["item new (consumer: vouch, claim, process, complete, settle)"])
	require.Equal(t, 2.0, pg["item duplicate (consumer: delivery of a SUCCEEDED item)"])
	if !testing.Short() {
		all := calls["aws all-old"]
		require.Equal(t, 1.0, all["lease acquire, contended (lease port)"])
		require.Equal(t, 2.0, all["lease acquire, contended, as shipped (lease port + contention record)"])
	}

	// The scale scenario runs a run-time list too: its memory rows on the
	// embedded store, and on the emulators its items spread over item
	// partition keys by page.
	figures := map[string]Row{}
	for _, row := range rows {
		figures[row.Backend+": "+row.Figure] = row
	}
	for _, f := range []string{"coordinator peak RSS (own process)", "consumer peak RSS (own process)", "tick → all done"} {
		require.Contains(t, figures, "sqlite: run-time list of 300 items: "+f)
	}
	if !testing.Short() {
		hot, ok := figures["aws, behind the throttling proxy: run-time list of 300 items: hottest item partition key, peak write units in one second"]
		require.True(t, ok)
		require.Positive(t, hot.Value)
		require.Contains(t, hot.Note, "5 item partition keys written", "300 items, 5 pages, one page per key")
	}

	var buf bytes.Buffer
	require.NoError(t, Markdown(&buf, SortRows(rows)))
	require.Equal(t, len(rows)+2, strings.Count(buf.String(), "\n"))
	t.Log("\n" + buf.String())
}

// TestLocksSmoke runs the lock scenario at a tiny size on PostgreSQL and,
// unless -short, on the emulator, whose call counts are exact: the goals
// of one call per free acquisition and per takeover, and dynamolock's two
// calls and its wait of a lease duration.
func TestLocksSmoke(t *testing.T) {
	if *report {
		t.Skip("report mode")
	}
	t.Parallel()
	targets := []Target{PostgresTarget("postgres", pgDatabases(t))}
	if !testing.Short() {
		ddb, sq := localaws.DynamoDB(t), localaws.SQS(t)
		targets = append(targets, AWSTarget("aws", ddb.Config(), sq.Config(), AWSOptions{}))
	}
	c := SmokeLockConfig()
	for _, tg := range targets {
		rows, err := Locks(t.Context(), tg, fmt.Sprintf("l%d-", time.Now().UnixNano()%1e6), c)
		require.NoError(t, err, tg.Name)
		figures := map[string]Row{}
		for _, row := range rows {
			require.Equal(t, "15 locks", row.Scenario)
			if row.Unit == Rate {
				// A rate over the smoke's tiny span may be 0 on a loaded
				// machine; the call counts below are what it checks.
				require.GreaterOrEqual(t, row.Value, 0.0, "%+v", row)
				require.GreaterOrEqual(t, row.Reference, 0.0, "%+v", row)
			} else {
				require.Positive(t, row.Value, "%+v", row)
				require.Positive(t, row.Reference, "%+v", row)
			}
			figures[row.Figure] = row
		}
		hot := fmt.Sprintf("acquisitions/s, one hot key, %d contenders (acquire waiting with jittered backoff, release at once)", c.HotContenders)
		require.Contains(t, figures, hot)
		if tg.Name == "postgres" {
			require.Len(t, rows, len(c.Keys)+1)
			continue
		}
		require.Len(t, rows, len(c.Keys)+4)
		free := figures["calls per free acquisition (new and released keys)"]
		require.Equal(t, 1.0, free.Value, "one conditional write")
		require.Equal(t, 2.0, free.Reference, "dynamolock: GetItem, PutItem")
		require.True(t, free.Met())
		calls := figures[fmt.Sprintf("takeover of an expired holder (lease %s, expired when asked): calls", c.Lease)]
		require.Equal(t, 1.0, calls.Value)
		require.True(t, calls.Met())
		require.GreaterOrEqual(t, calls.Reference, float64(c.Lease/c.Refresh), "dynamolock polls through a lease duration")
		took := figures[fmt.Sprintf("takeover of an expired holder (lease %s, expired when asked): time, p50 of %d", c.Lease, c.Takeovers)]
		require.GreaterOrEqual(t, took.Reference, c.Lease.Seconds(), "dynamolock waits a lease duration")
		require.Less(t, took.Value, c.Lease.Seconds(), "baton takes an expired holder over at once")
	}
}

// TestRunTimeListMillion is `make bench-million`: one run of 1,000,000
// run-time items on the embedded store, with its heap and peak RSS.
func TestRunTimeListMillion(t *testing.T) {
	if !*million {
		t.Skip("runs with -million (make bench-million)")
	}
	fmt.Fprintf(os.Stderr, "machine: %s\n", Machine())
	rows, err := RunTimeList(t.Context(), SQLiteTarget(t.TempDir()), 1_000_000)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, Markdown(&buf, SortRows(rows)))
	_, err = tableOut.Write(buf.Bytes())
	require.NoError(t, err)
	fmt.Fprintf(os.Stderr, "load after: %s\n", LoadAverage())
}
