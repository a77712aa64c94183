package consumer

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/internal/telemetry"
)

// startItem starts the span of one delivery of an item message (or a
// shard message, or an item of a bulk shard run in place): a child of
// ctx's span, else of the span the message carries, linked to the span
// the message carries (telemetry.Extract: the run's that enqueued it, or
// the input whose end made a derived item ready). A message that carries
// none (sent by an earlier version) is traced all the same, linked to
// nothing. The span is the origin of the messages sent under it (a
// derived item's): telemetry.WithOrigin.
func (c *Consumer) startItem(ctx context.Context, d *delivery) (context.Context, trace.Span) {
	sc, carried := telemetry.Extract(d.d.Attributes)
	if carried && !trace.SpanContextFromContext(ctx).IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	ctx, span := c.Telemetry.Start(ctx, telemetry.SpanItem, itemOptions...)
	if carried && span.IsRecording() {
		// Added once started: a span that does not record costs no link.
		span.AddLink(trace.Link{SpanContext: sc})
	}
	if span.IsRecording() {
		span.SetAttributes(
			telemetry.KeyMessage.String(d.d.MessageID),
			telemetry.KeyReceive.Int(d.d.ReceiveCount),
		)
		if d.err == nil {
			span.SetAttributes(
				telemetry.KeyJob.String(d.key.Run.Job),
				telemetry.KeyRun.String(d.key.Run.String()),
				telemetry.KeyItem.String(d.msg.Key),
				telemetry.KeyFence.Int64(d.msg.Fence),
			)
		}
	}
	if !span.IsRecording() {
		// The messages sent under ctx carry its span's context all the
		// same: the one the message carried, passed on.
		return ctx, span
	}
	return telemetry.WithOrigin(ctx), span
}

// itemOptions are the item span's options, built once.
var itemOptions = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}

// endItem ends the span of d with v's outcome and counts it.
func (c *Consumer) endItem(ctx context.Context, span trace.Span, d *delivery, v verdict) {
	o := v.outcome
	if span.IsRecording() && o.Attempt > 0 {
		span.SetAttributes(telemetry.KeyAttempt.Int(o.Attempt))
	}
	var err error
	switch o.Status {
	case StatusFailed, StatusDead, StatusMalformed, StatusUnvouched:
		err = v.err
	}
	telemetry.End(span, o.Status, err)
	job := ""
	if d.err == nil {
		job = d.job.Name // a catalog's name: bounded, unlike a malformed message's
	}
	c.Telemetry.Item(ctx, job, o.Status)
	if o.Status == StatusSucceeded && o.TickToDone > 0 {
		c.Telemetry.TickToDone(ctx, job, o.TickToDone)
	}
}

// stepSpan starts the span of one of an item's steps (vouch, claim,
// complete, fan-in) under ctx's span.
func (c *Consumer) stepSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	return c.Telemetry.Step(ctx, name)
}

// claimed records the claim's latency.
func (c *Consumer) claimed(ctx context.Context, job string, took time.Duration) {
	c.Telemetry.ClaimLatency(ctx, job, took)
}
