package exec

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/telemetry"
)

// While the runtime consumes, each of its queues reports its depth
// (baton.queue.depth) by name: the shared work queue, the dead-letter
// queue and each job queue; after Consume returns, none.
func TestConsumeReportsQueueDepths(t *testing.T) {
	t.Parallel()
	b, err := sqlitebackend.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	idle := baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })
	cat := baton.MustCatalog(
		baton.Job{Name: "shared", Schedule: "rate(1 minute)", Assets: []string{"a"}, Processor: idle},
		baton.Job{Name: "noisy", Schedule: "rate(1 minute)", Assets: []string{"a"}, Queue: baton.JobQueue{Name: "noisy"}, Processor: idle},
	)
	e, err := New(b, Options{Catalog: cat, Telemetry: telemetry.New(telemetry.Options{MeterProvider: mp, Engine: b.Name})})
	require.NoError(t, err)
	// Two dead letters, which no consumer takes.
	_, err = queue.SendAll(t.Context(), b.DeadLetter, []queue.Message{{Body: []byte("x")}, {Body: []byte("y")}}, nil)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = e.Consume(ctx) })
	// depth is each queue's reported depth, by name.
	depth := func() map[string]int64 {
		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(context.Background(), &rm))
		out := map[string]int64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != "baton.queue.depth" {
					continue
				}
				for _, p := range m.Data.(metricdata.Gauge[int64]).DataPoints {
					engine, _ := p.Attributes.Value(telemetry.KeyEngine)
					require.Equal(t, "sqlite", engine.AsString())
					q, _ := p.Attributes.Value(telemetry.KeyQueue)
					out[q.AsString()] = p.Value
				}
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return len(depth()) == 3 }, 10*time.Second, 10*time.Millisecond, "three queues report")
	require.Equal(t, map[string]int64{"work": 0, "work-dlq": 2, "job-noisy": 0}, depth())
	cancel()
	wg.Wait()
	require.Empty(t, depth(), "no report once the runtime stopped")
}
