package postgresbackend_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend/postgresbackend"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/telemetry"
	"github.com/batonhq/baton/internal/telemetry/telemetrytest"
)

// One tick of the reference job traced end to end on PostgreSQL: the
// trace context travels in the queue's attributes column.
func TestTrace(t *testing.T) {
	t.Parallel()
	telemetrytest.Run(t, openFresh(t))
}

// Every statement is a span (pgx's tracer hook), a child of the step
// that ran it: the lease's under the coordinator's lease step, the
// claim's under an item's claim step.
func TestStatementsAreChildSpans(t *testing.T) {
	t.Parallel()
	tp, rec := telemetrytest.Recorder(t)
	dsn := pgtest.DSN(t)
	_, err := postgresbackend.Setup(t.Context(), dsn, 0)
	require.NoError(t, err)
	b, err := postgresbackend.Open(t.Context(), postgresbackend.Params{DSN: dsn, TracerProvider: tp})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	e, err := exec.New(b, exec.Options{Catalog: fx.Catalog(nil), Telemetry: telemetry.New(telemetry.Options{TracerProvider: tp})})
	require.NoError(t, err)
	sum, err := e.Trigger(t.Context(), "fx", time.Now(), false)
	require.NoError(t, err)
	ds, err := b.Work.Receive(t.Context(), queue.ReceiveParams{Max: 1, Visibility: time.Minute})
	require.NoError(t, err)
	require.Len(t, ds, 1)
	res := e.Consumer.Handle(t.Context(), time.Time{}, ds)
	require.Empty(t, res.Failed, "run %s", sum.Run)

	byID := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byID[telemetrytest.ID(s.SpanContext())] = s
	}
	under := map[string]int{} // baton step → statements under it
	for _, s := range rec.Ended() {
		if s.InstrumentationScope().Name == telemetry.ScopeName {
			continue
		}
		if p, ok := byID[telemetrytest.ID(s.Parent())]; ok && p.InstrumentationScope().Name == telemetry.ScopeName {
			under[p.Name()]++
		}
	}
	for _, step := range []string{telemetry.SpanLease, telemetry.SpanOpen, telemetry.SpanClaim, telemetry.SpanComplete} {
		require.Positive(t, under[step], "statements under %s: %v", step, under)
	}
}
