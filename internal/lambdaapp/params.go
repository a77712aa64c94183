package lambdaapp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/emf"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/ratelimit"
	"github.com/batonhq/baton/internal/telemetry"
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
	// JobQueues are the job queues (baton.JobQueue) by name: the messages
	// of a job that names one are sent there. Every queue a job of Jobs
	// names must be here.
	JobQueues map[string]queue.Sender
	// Sources, optional, are the queues a consumer's batches come from, by
	// SQS queue name (the last part of a record's eventSourceARN), so that
	// a heartbeat extends a message on its own queue; a batch from a
	// queue not here is taken as the work queue's (consumer).
	Sources map[string]queue.Sender
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
	// Service names the deployment (the stack) in every log line
	// ("service") and metric (dimension service, as Powertools spells it), so that two stacks in
	// one account do not merge; "" means DefaultService.
	Service string
	// Namespace is the CloudWatch namespace of the metrics; "" means
	// DefaultNamespace.
	Namespace string
	Logger    *slog.Logger // nil: discard
	Metrics   io.Writer    // EMF lines; nil: none
	NowFunc   func() time.Time
	// Telemetry is the OpenTelemetry tracer and meter of the handlers;
	// nil: the global providers.
	Telemetry *telemetry.Telemetry
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
	for name, jobs := range jobspec.Queues(p.Jobs) {
		if p.JobQueues[name] == nil {
			return fmt.Errorf("%s handler: no URL for queue %s of jobs %v: set it in %s (name=url)", f, name, jobs, EnvJobQueues)
		}
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

// build builds the core the handler of f works on (exec.Build), once,
// at construction: the job-queue router, the chain starter, the
// consumer's caches. owner is the handler's function name.
func (p HandlerParams) build(f Function, owner string) (*exec.Core, error) {
	core, err := exec.Build(exec.Parts{
		Catalog: p.Jobs, Leases: p.Leases, Ledger: p.Ledger, Effects: p.Effects, RateLimits: p.RateLimits,
		Work: p.Queue, JobQueues: p.JobQueues, DeadLetter: p.DeadLetter, MaxReceives: p.MaxReceives,
		Owner: owner, NowFunc: p.NowFunc, Logger: p.logger(), Telemetry: p.Telemetry,
	})
	if err != nil {
		return nil, fmt.Errorf("%s handler: %w", f, err)
	}
	return core, nil
}

func (p HandlerParams) service() string {
	if p.Service != "" {
		return p.Service
	}
	return DefaultService
}

func (p HandlerParams) namespace() string {
	if p.Namespace != "" {
		return p.Namespace
	}
	return DefaultNamespace
}

// invocation is what one call of a handler knows about itself.
type invocation struct {
	requestID string
	traceID   string
	function  string
	service   string
	namespace string
	cold      bool // the first invocation of the handler in this process
	owner     string
	deadline  time.Time // zero: none
	log       *slog.Logger
}

// coldStart is a handler's cold-start flag: true for its first
// invocation only.
type coldStart struct{ warm atomic.Bool }

func (c *coldStart) take() bool { return !c.warm.Swap(true) }

// traceID is the invocation's X-Ray trace id: the Lambda runtime puts it
// in the context (and in _X_AMZN_TRACE_ID) as "Root=1-…;Parent=…;
// Sampled=…"; the log shows the root, as Powertools does.
func traceID(ctx context.Context) string {
	s, _ := ctx.Value("x-amzn-trace-id").(string)
	for part := range strings.SplitSeq(s, ";") {
		if root, ok := strings.CutPrefix(part, "Root="); ok {
			return root
		}
	}
	return s
}

// invocationOf reads the request id (a random one outside Lambda) and the
// deadline from ctx. The deadline is carried over to the handler's clock
// (now): it is now plus the time left until ctx's deadline by the wall
// clock, which is ctx's deadline itself when now is the wall clock.
func invocationOf(ctx context.Context, function string, p HandlerParams, cold *coldStart, now time.Time) invocation {
	inv := invocation{function: function, service: p.service(), namespace: p.namespace(), cold: cold.take(), traceID: traceID(ctx)}
	lc, hasLC := lambdacontext.FromContext(ctx)
	if hasLC && lc.AwsRequestID != "" {
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
	// The Powertools keys (package jsonlog writes timestamp, level and
	// message): every line of the invocation carries them.
	attrs := []any{slog.String("service", inv.service), slog.Bool("cold_start", inv.cold),
		slog.String("function_name", function), slog.String("function_request_id", inv.requestID)}
	if hasLC && lc.InvokedFunctionArn != "" { // set by the Lambda runtime
		attrs = append(attrs, slog.String("function_arn", lc.InvokedFunctionArn))
	}
	if lambdacontext.MemoryLimitInMB > 0 { // AWS_LAMBDA_FUNCTION_MEMORY_SIZE
		attrs = append(attrs, slog.Int("function_memory_size", lambdacontext.MemoryLimitInMB))
	}
	if inv.traceID != "" { // none outside Lambda unless the caller traces
		attrs = append(attrs, slog.String("xray_trace_id", inv.traceID))
	}
	inv.log = p.logger().With(attrs...)
	return inv
}

// DefaultNamespace is the CloudWatch namespace of baton's metrics unless
// configured (BATON_METRICS_NAMESPACE).
const DefaultNamespace = "Baton"

// Namespace is DefaultNamespace, under its former name.
const Namespace = DefaultNamespace

// DefaultService is the service of logs and metrics unless configured
// (BATON_SERVICE_NAME; the template sets the stack's name).
const DefaultService = "baton"

// coldStartMetric writes the ColdStart metric of the invocation when it
// is the handler's first: 1, with the dimensions function_name and
// service, as Powertools writes it.
func (inv invocation) coldStartMetric(ctx context.Context, w *emf.Writer, at time.Time) {
	if w == nil || !inv.cold {
		return
	}
	err := w.Write(emf.Record{
		Namespace:  inv.namespace,
		Dimensions: map[string]string{"function_name": inv.function, "service": inv.service},
		Metrics:    []emf.Metric{{Name: "ColdStart", Unit: emf.Count, Values: []float64{1}}},
		Properties: inv.properties(nil),
		Time:       at,
	})
	if err != nil {
		inv.log.WarnContext(ctx, "metrics not written", slog.String("phase", "metrics"), slog.Any("error", err))
	}
}

func (inv invocation) emit(ctx context.Context, w *emf.Writer, at time.Time, job string, props map[string]any, metrics ...emf.Metric) {
	inv.emitDims(ctx, w, at, map[string]string{"Job": job}, props, metrics...)
}

// emitDims is emit with the dimensions dims (and service).
func (inv invocation) emitDims(ctx context.Context, w *emf.Writer, at time.Time, dims map[string]string, props map[string]any, metrics ...emf.Metric) {
	if w == nil {
		return
	}
	if props == nil {
		props = map[string]any{}
	}
	props = inv.properties(props)
	dimensions := maps.Clone(dims)
	dimensions["service"] = inv.service
	err := w.Write(emf.Record{
		Namespace:  inv.namespace,
		Dimensions: dimensions,
		Metrics:    metrics,
		Properties: props,
		Time:       at,
	})
	if err != nil {
		inv.log.WarnContext(ctx, "metrics not written", slog.String("phase", "metrics"), slog.Any("error", err))
	}
}

// properties adds the invocation's request and trace to a record's
// properties.
func (inv invocation) properties(props map[string]any) map[string]any {
	if props == nil {
		props = map[string]any{}
	}
	props["function_request_id"] = inv.requestID
	if inv.traceID != "" {
		props["xray_trace_id"] = inv.traceID
	}
	return props
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
