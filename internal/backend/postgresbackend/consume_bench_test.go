package postgresbackend_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
)

// BenchmarkConsumeBatch is the consumer's whole path on PostgreSQL for
// one batch of 100 item messages per op, as the runtime's poller runs it
// (scenario 7 of lab/bench): one receive, the batch's vouches, claims,
// processors (which return at once), completions and settles, one
// delete. The coordinator's fan-out of each run (500 item messages,
// five batches) runs with the timer stopped. Besides the figures per batch it
// reports per item: ns/item (wall time, the server's work included),
// cpu-ns/item (this process's CPU time: the client's, not the server's),
// allocs/item and B/item.
func BenchmarkConsumeBatch(b *testing.B) {
	const batch, runItems = 100, 500
	be := openFresh(b)
	assets := make([]string, runItems)
	for i := range assets {
		assets[i] = fmt.Sprintf("A%05d", i)
	}
	job := baton.Job{
		Name: "bench", Schedule: "rate(1 minute)", Assets: assets,
		Limits: baton.Limits{LeaseTTL: 2 * time.Minute, ClockSkew: time.Second, ItemLease: time.Minute,
			MaxAttempts: 5, Concurrency: batch, DeadlineMargin: 2 * time.Second},
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return []byte("1"), nil }),
	}
	eng, err := exec.New(be, exec.Options{Catalog: baton.MustCatalog(job), Consumers: 1, BatchSize: batch,
		BatchTimeout: time.Minute, Owner: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	p := eng.Poller()
	ctx := context.Background()
	nominal := time.Now().UTC().Truncate(time.Minute).Add(-24 * time.Hour)
	var runs []ledger.RunID
	var ms0, ms1 runtime.MemStats
	var mallocs, bytes uint64
	var cpu0, cpu time.Duration
	// measure counts the allocations and the process's CPU time between
	// its calls' pairs, as the timer does (the set-up is left out).
	measure := func(start bool) {
		runtime.ReadMemStats(&ms1)
		if start {
			ms0, cpu0 = ms1, processCPU()
			return
		}
		cpu += processCPU() - cpu0
		mallocs += ms1.Mallocs - ms0.Mallocs
		bytes += ms1.TotalAlloc - ms0.TotalAlloc
	}
	polled := 0
	b.ReportAllocs()
	b.ResetTimer()
	measure(true)
	for b.Loop() {
		if polled%runItems == 0 {
			measure(false)
			b.StopTimer()
			nominal = nominal.Add(time.Minute)
			sum, err := eng.Trigger(ctx, job.Name, nominal, false)
			if err != nil || sum.Outcome != coordinator.OutcomeOpened {
				b.Fatalf("trigger %s: %v, %v", nominal, sum.Outcome, err)
			}
			runs = append(runs, sum.Run)
			b.StartTimer()
			measure(true)
		}
		n, err := p.Poll(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if n != batch {
			b.Fatalf("received %d messages, want %d", n, batch)
		}
		polled += n
	}
	measure(false)
	b.StopTimer()
	items := float64(polled)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/items, "ns/item")
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/items, "cpu-ns/item")
	}
	b.ReportMetric(float64(mallocs)/items, "allocs/item")
	b.ReportMetric(float64(bytes)/items, "B/item")

	// Every batch was handled whole: nothing left in the queue, every
	// item of every finished run succeeded.
	d, err := be.Work.(queue.Counter).Depth(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if left := d.Visible + d.InFlight; left != runItems*len(runs)-polled {
		b.Fatalf("%d messages left in the work queue after %d of %d runs' items", left, polled, runItems*len(runs))
	}
	for _, id := range runs[:polled/runItems] {
		run, err := be.Ledger.GetRun(ctx, id.Job, id.Nominal)
		if err != nil {
			b.Fatal(err)
		}
		if run.State != ledger.RunComplete || run.Succeeded != runItems {
			b.Fatalf("run %s: %s, %d of %d succeeded", id, run.State, run.Succeeded, runItems)
		}
	}
}
