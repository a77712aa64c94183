package coordinator_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/telemetry"
	"github.com/batonhq/baton/internal/telemetry/telemetrytest"
)

// A trigger's invocation is a span with its steps; the run it finishes
// starts its chain in an invocation span of its own (kind chain), a
// child of the trigger's settle step, and the chained run's messages
// carry the chain's span, not the trigger's.
func TestChainInvocationSpan(t *testing.T) {
	t.Parallel()
	b := setup(t, chainJobs()...)
	tp, rec := telemetrytest.Recorder(t)
	ctx := context.Background()
	sum, err := b.coordinator("c1").Run(ctx, coordinator.Trigger{Job: "up", At: t0})
	require.NoError(t, err)
	for _, a := range []string{"u1", "u2"} {
		finishItem(t, b, sum.Run, a, ledger.ItemSucceeded)
	}
	c2 := b.coordinator("c2")
	c2.Telemetry = telemetry.New(telemetry.Options{TracerProvider: tp})
	b.clock.Advance(5 * time.Second)
	_, err = c2.Run(ctx, coordinator.Trigger{Job: "up", At: b.clock.Now()})
	require.NoError(t, err)

	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range telemetrytest.Named(rec, telemetry.SpanCoordinator) {
		spans[telemetrytest.Attr(s, string(telemetry.KeyKind))] = s
	}
	trigger, chain := spans["trigger"], spans["chain"]
	require.NotNil(t, trigger)
	require.NotNil(t, chain)
	require.Equal(t, string(coordinator.OutcomeAlreadyFannedOut), telemetrytest.Attr(trigger, string(telemetry.KeyOutcome)))
	require.Equal(t, "down", telemetrytest.Attr(chain, string(telemetry.KeyJob)))
	require.Equal(t, "3", telemetrytest.Attr(chain, string(telemetry.KeyEnqueue)))
	var settle sdktrace.ReadOnlySpan
	for _, s := range telemetrytest.Named(rec, telemetry.SpanSettle) {
		if telemetrytest.ID(s.Parent()) == telemetrytest.ID(trigger.SpanContext()) {
			settle = s
		}
	}
	require.NotNil(t, settle, "the trigger's settle step")
	require.Equal(t, telemetrytest.ID(settle.SpanContext()), telemetrytest.ID(chain.Parent()))

	b.queue.mu.Lock()
	defer b.queue.mu.Unlock()
	n := 0
	for _, m := range b.queue.msgs {
		k, err := ledger.ParseItemKey(m.Attributes[message.AttrKey])
		require.NoError(t, err)
		if k.Run.Job != "down" {
			continue
		}
		n++
		sc, ok := telemetry.Extract(m.Attributes)
		require.True(t, ok)
		require.Equal(t, telemetrytest.ID(chain.SpanContext()), telemetrytest.ID(sc))
	}
	require.Equal(t, 3, n)
}

// The record of a run keeps the trace of the invocation span that opened
// it, a submission's as a trigger's; an untraced open keeps none.
func TestRunRecordKeepsTheOpenersTrace(t *testing.T) {
	t.Parallel()
	j := bigJob("ingest", 2)
	b := setup(t, j)
	tp, rec := telemetrytest.Recorder(t)
	c := b.coordinator("c1")
	c.Telemetry = telemetry.New(telemetry.Options{TracerProvider: tp})
	sum, err := c.Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "order-42", Items: []baton.Item{{Name: "a"}}})
	require.NoError(t, err)
	spans := telemetrytest.Named(rec, telemetry.SpanCoordinator)
	require.Len(t, spans, 1)
	job, nominal := ledger.TickOf(sum.Run)
	run, err := b.ledger.GetRun(t.Context(), job, nominal)
	require.NoError(t, err)
	require.Equal(t, spans[0].SpanContext().TraceID().String(), run.TraceID)

	// With no provider (the global no-op), no span context: none kept.
	sum, err = b.coordinator("c2").Submit(t.Context(), coordinator.Submission{Job: "ingest", Key: "order-43", Items: []baton.Item{{Name: "a"}}})
	require.NoError(t, err)
	require.Equal(t, coordinator.OutcomeOpened, sum.Outcome)
	job, nominal = ledger.TickOf(sum.Run)
	run, err = b.ledger.GetRun(t.Context(), job, nominal)
	require.NoError(t, err)
	require.Empty(t, run.TraceID)
}
