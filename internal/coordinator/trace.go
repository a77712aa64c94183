package coordinator

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/internal/telemetry"
)

// startInvocation starts the span of one coordinator invocation (a
// trigger's Run, a submission or a chain) under ctx's span, and marks it
// as the origin of the messages sent under it (telemetry.WithOrigin): an
// item's span links to the run's invocation, not to one of its steps.
func (c *Coordinator) startInvocation(ctx context.Context, kind, job string) (context.Context, trace.Span) {
	ctx, span := c.Telemetry.Start(ctx, telemetry.SpanCoordinator, invocationOptions...)
	if !span.IsRecording() {
		return ctx, span
	}
	span.SetAttributes(telemetry.KeyJob.String(job), telemetry.KeyKind.String(kind))
	return telemetry.WithOrigin(ctx), span
}

// invocationOptions are the invocation span's options, built once.
var invocationOptions = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindProducer)}

// endInvocation ends the invocation's span with what sum says, and counts
// the invocation.
func (c *Coordinator) endInvocation(ctx context.Context, span trace.Span, sum *Summary, err error) {
	outcome := string(sum.Outcome)
	if err != nil {
		outcome = "error"
	}
	if span.IsRecording() {
		span.SetAttributes(telemetry.KeyEnqueue.Int(sum.Enqueued))
		if sum.Run.Job != "" {
			span.SetAttributes(telemetry.KeyRun.String(sum.Run.String()))
		}
		if sum.Fence != 0 {
			span.SetAttributes(telemetry.KeyFence.Int64(sum.Fence))
		}
		if sum.Stopped != "" {
			span.SetAttributes(telemetry.KeyStopped.String(sum.Stopped))
		}
	}
	telemetry.End(span, outcome, err)
	if sum.Job != "" && outcome != "" {
		c.Telemetry.Invocation(ctx, sum.Job, outcome, sum.Outcome == OutcomeSkipped && !errors.Is(err, ErrNoTime))
	}
}

// step starts the span of one of an invocation's steps (lease, open,
// fan-out, settle, release) under ctx's span.
func (c *Coordinator) step(ctx context.Context, name string) (context.Context, trace.Span) {
	return c.Telemetry.Step(ctx, name)
}
