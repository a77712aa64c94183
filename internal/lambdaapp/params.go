package lambdaapp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/emf"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/ratelimit"
)

// HandlerParams are what a handler works on. Fields marked (coordinator)
// or (consumer) are used by that handler only.
type HandlerParams struct {
	Jobs   *baton.Catalog // the jobs served: every job a trigger or a message may name
	Leases lease.Store    // (coordinator)
	Ledger ledger.Store
	// Effects is the store of the processors' fenced effects (consumer).
	Effects effect.Store
	// RateLimits keeps shared rate limits' counters; nil: a processor's
	// Task.Wait fails and PerItem limits stop every item of their job.
	RateLimits ratelimit.Store
	Queue      queue.Sender // the work queue
	// DeadLetter, optional, receives malformed and exhausted messages with
	// their reason (consumer).
	DeadLetter queue.Sender
	// MaxReceives is the work queue's redrive limit (consumer); 0: leave
	// dead-lettering to the queue.
	MaxReceives int
	// TriggerSkew is how far in the future a trigger time may be
	// (coordinator); 0 means DefaultTriggerSkew.
	TriggerSkew time.Duration
	// TriggerAge, when positive, is how old a scheduled trigger's time may
	// be (coordinator); replays are exempt. 0: no bound.
	TriggerAge time.Duration
	// FunctionName prefixes owners; "" means the Lambda function's name,
	// or the handler's kind outside Lambda.
	FunctionName string
	Logger       *slog.Logger // nil: discard
	Metrics      io.Writer    // EMF lines; nil: none
	NowFunc      func() time.Time
}

func (p HandlerParams) validate(f Function) error {
	var missing []string
	if p.Jobs == nil {
		missing = append(missing, "Jobs")
	}
	if p.Ledger == nil {
		missing = append(missing, "Ledger")
	}
	if p.Queue == nil {
		missing = append(missing, "Queue")
	}
	if f == Coordinator && p.Leases == nil {
		missing = append(missing, "Leases")
	}
	if f == Consumer && p.Effects == nil {
		missing = append(missing, "Effects")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s handler: missing %v", f, missing)
	}
	if p.MaxReceives < 0 {
		return errors.New("consumer handler: MaxReceives must not be negative")
	}
	return nil
}

func (p HandlerParams) logger() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (p HandlerParams) metrics() *emf.Writer {
	if p.Metrics == nil {
		return nil
	}
	return emf.NewWriter(p.Metrics)
}

func (p HandlerParams) functionName(f Function) string {
	switch {
	case p.FunctionName != "":
		return p.FunctionName
	case lambdacontext.FunctionName != "":
		return lambdacontext.FunctionName
	}
	return string(f)
}

// invocation is what one call of a handler knows about itself.
type invocation struct {
	requestID string
	owner     string
	deadline  time.Time // zero: none
	log       *slog.Logger
}

// invocationOf reads the request id (a random one outside Lambda) and the
// deadline from ctx. The deadline is carried over to the handler's clock
// (now): it is now plus the time left until ctx's deadline by the wall
// clock, which is ctx's deadline itself when now is the wall clock.
func invocationOf(ctx context.Context, function string, base *slog.Logger, now time.Time) invocation {
	var inv invocation
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		inv.requestID = lc.AwsRequestID
	} else {
		var b [8]byte
		_, _ = rand.Read(b[:]) // never fails
		inv.requestID = "local-" + hex.EncodeToString(b[:])
	}
	inv.owner = function + "/" + inv.requestID
	if d, ok := ctx.Deadline(); ok {
		inv.deadline = now.Add(time.Until(d))
	}
	inv.log = base.With(slog.String("function", function), slog.String("request_id", inv.requestID))
	return inv
}

// Namespace is the CloudWatch namespace of baton's metrics.
const Namespace = "Baton"

func (inv invocation) emit(ctx context.Context, w *emf.Writer, at time.Time, job string, props map[string]any, metrics ...emf.Metric) {
	if w == nil {
		return
	}
	if props == nil {
		props = map[string]any{}
	}
	props["request_id"] = inv.requestID
	err := w.Write(emf.Record{
		Namespace:  Namespace,
		Dimensions: map[string]string{"Job": job},
		Metrics:    metrics,
		Properties: props,
		Time:       at,
	})
	if err != nil {
		inv.log.WarnContext(ctx, "metrics not written", slog.String("phase", "metrics"), slog.Any("error", err))
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
