package cli

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/spf13/pflag"

	"github.com/batonhq/baton/internal/lambdaapp"
)

const invokeSynopsis = `invoke coordinator|consumer --event FILE [flags]

Runs one Lambda function's handler in this process on an event, the way
the Lambda runtime does: the payload goes through the handler's JSON
decoding, the context carries a request id and a deadline --timeout away,
and the response is printed as JSON on stdout. A failed invocation prints
{"errorMessage": ..., "errorType": ...} as Lambda reports it, and exits
with status 1, as does a consumer batch that reports failed records
(batchItemFailures), the same contract as 'baton replay event'. The
file must hold one JSON value and nothing after it (the runtime would
read the first value and drop the rest), and the consumer's must be an
SQS event (Records from aws:sqs): anything else is refused before the
handler runs, with exit status 2 and what is wrong. Logs
(JSON lines) go to stderr, and at --log info or debug
the metrics too (CloudWatch Embedded Metric Format).

The twin of 'sam local invoke -e FILE', without Docker: on the embedded
store by default, or with --backend aws on DynamoDB and SQS (the variables
'baton setup' prints). The fixtures in events/ are such events:

  baton invoke coordinator --event events/coordinator-scheduled.json --trigger-age 0
  baton invoke consumer --event events/consumer-batch.json

A scheduled trigger (rule event, Scheduler payload) older than
--trigger-age is refused as a stale delivery, as the deployed function
refuses it (6h unless $BATON_TRIGGER_MAX_AGE says otherwise); the
fixtures' ticks are fixed, so their invocations waive the bound with
--trigger-age 0, as env.json does for 'sam local invoke'. Replays (a
payload with "force") are exempt.`

// Timeout error as the Lambda service reports a function that ran out of
// time.
const timeoutErrorType = "Sandbox.Timedout"

type invokeFlags struct {
	common    *backendFlags
	event     string
	timeout   time.Duration
	requestID string
	traceID   string
	logLevel  string
	age       triggerAgeFlag
}

func invokeCommand() command {
	return command{synopsis: invokeSynopsis, summary: "run a Lambda function's handler on an event file, in-process",
		example: "  baton invoke coordinator --event events/coordinator-scheduled.json --trigger-age 0\n  baton invoke consumer --event events/consumer-batch.json --backend aws --json",
		backend: true, positional: true, defineFunc: defineInvoke}
}

func defineInvoke(e *env, fs *pflag.FlagSet) runFunc {
	f := invokeFlags{common: &e.backend}
	fs.StringVar(&f.event, "event", "", "the event payload, a JSON file (required)")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "the function's timeout: the invocation's deadline")
	fs.StringVar(&f.requestID, "request-id", "", "the invocation's request id (default: a random UUID)")
	fs.StringVar(&f.traceID, "trace-id", "", "the invocation's X-Ray trace header, Root=1-…;Parent=…;Sampled=0 (default: a new one, as Lambda makes)")
	fs.StringVar(&f.logLevel, "log", envOr(lambdaapp.EnvLogLevel, "info"), "log level on stderr: debug, info, warn, error (from $"+lambdaapp.EnvLogLevel+" when set)")
	f.age.register(fs)
	return func(ctx context.Context, args []string) error { return invokeRun(ctx, e, &f, args) }
}

func invokeRun(ctx context.Context, e *env, f *invokeFlags, args []string) error {
	fn, level, err := f.parse(args)
	if err != nil {
		return err
	}
	age, err := f.age.value()
	if err != nil {
		return err
	}
	payload, err := readEvent(f.event)
	if err != nil {
		return err
	}
	if fn == lambdaapp.Consumer {
		if err := checkSQSEvent(payload); err != nil {
			return usagef("event %s: %v", f.event, err)
		}
	}
	b, err := f.common.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	if f.common.job != "" { // the handlers serve every job; a named one must exist
		if _, err := lookupJob(e.catalog, f.common.job); err != nil {
			return err
		}
	}
	p := lambdaapp.HandlerParams{
		Jobs:   e.catalog,
		Leases: b.Leases, Ledger: b.Ledger, Effects: b.Effects, RateLimits: b.RateLimits, Queue: b.Work, MaxReceives: b.MaxReceives,
		Logger:  lambdaapp.NewLogger(e.stderr, level),
		Service: envOr(lambdaapp.EnvService, lambdaapp.DefaultService), Namespace: envOr(lambdaapp.EnvNamespace, lambdaapp.DefaultNamespace),
		TriggerAge: age,
	}
	if level <= slog.LevelInfo {
		p.Metrics = e.stderr
	}
	if b.DeadLetter != nil {
		p.DeadLetter = b.DeadLetter
	}
	h, err := newHandler(fn, p)
	if err != nil {
		return err
	}

	//lint:ignore SA1029 the string key is the one the Lambda runtime sets and lambdaapp reads
	ctx = context.WithValue(ctx, "x-amzn-trace-id", f.traceID)
	out, ierr := invoke(ctx, h, payload, f.requestID, f.timeout)
	if ierr != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w", ctx.Err())
		}
		b, _ := json.Marshal(ierr)
		e.printResponse(b)
		return errFailed
	}
	e.printResponse(out)
	if fn == lambdaapp.Consumer {
		var resp events.SQSEventResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			return fmt.Errorf("consumer response: %w", err)
		}
		if n := len(resp.BatchItemFailures); n > 0 {
			fmt.Fprintf(e.stderr, "%s invoke: %d record(s) failed (SQS would redeliver them; malformed ones went to the dead-letter queue with their reason)\n", e.prog, n)
			return errFailed
		}
	}
	return nil
}

// parse checks the function named in args and the flags.
func (f *invokeFlags) parse(args []string) (lambdaapp.Function, slog.Level, error) {
	var level slog.Level
	var function string
	rest := args
	if len(rest) > 0 {
		function, rest = rest[0], rest[1:]
	}
	fn := lambdaapp.Function(function)
	switch {
	case len(rest) > 0:
		return "", level, usagef("unexpected argument %q", rest[0])
	case function == "":
		return "", level, usagef("which function? want coordinator or consumer")
	case fn != lambdaapp.Coordinator && fn != lambdaapp.Consumer:
		return "", level, usagef("unknown function %q (want coordinator or consumer)", function)
	case f.event == "":
		return "", level, usagef("--event FILE is required")
	case f.timeout <= 0:
		return "", level, usagef("--timeout must be positive, got %s", f.timeout)
	}
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return "", level, usagef("--log: %q is not a level (debug, info, warn, error)", f.logLevel)
	}
	if f.requestID == "" {
		f.requestID = lambdaapp.NewRequestID()
	}
	if f.traceID == "" {
		f.traceID = newTraceID(time.Now())
	}
	return fn, level, nil
}

// newHandler returns fn's handler on p, as lambda.Start would run it.
func newHandler(fn lambdaapp.Function, p lambdaapp.HandlerParams) (lambda.Handler, error) {
	if fn == lambdaapp.Coordinator {
		h, err := lambdaapp.NewCoordinatorHandler(p)
		if err != nil {
			return nil, err
		}
		return lambda.NewHandler(h.Handle), nil
	}
	h, err := lambdaapp.NewConsumerHandler(p)
	if err != nil {
		return nil, err
	}
	return lambda.NewHandler(h.Handle), nil
}

// invoke runs h on payload as one Lambda invocation with request id id
// and a deadline timeout from now. It returns the response, or the error
// as the Lambda service reports it: the handler's error or panic, or a
// timeout when the deadline passes first (the handler is then abandoned,
// as Lambda stops the execution environment).
func invoke(ctx context.Context, h lambda.Handler, payload []byte, id string, timeout time.Duration) ([]byte, *messages.InvokeResponse_Error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: id})

	type result struct {
		out []byte
		err *messages.InvokeResponse_Error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{err: &messages.InvokeResponse_Error{Message: fmt.Sprint(r), Type: typeName(r)}}
			}
		}()
		out, err := h.Invoke(ctx, payload)
		if err != nil {
			done <- result{err: lambdaError(err)}
			return
		}
		done <- result{out: out}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-ctx.Done():
		select {
		case r := <-done: // finished as the deadline struck
			return r.out, r.err
		default:
		}
		return nil, &messages.InvokeResponse_Error{
			Message: fmt.Sprintf("RequestId: %s Error: Task timed out after %.2f seconds", id, timeout.Seconds()),
			Type:    timeoutErrorType,
		}
	}
}

// lambdaError is err as the Go runtime reports a handler's error: its
// message, and the name of its dynamic type.
func lambdaError(err error) *messages.InvokeResponse_Error {
	if ive, ok := err.(messages.InvokeResponse_Error); ok { //nolint:errorlint // as the runtime does
		return &ive
	}
	return &messages.InvokeResponse_Error{Message: err.Error(), Type: typeName(err)}
}

func typeName(v any) string {
	t := reflect.TypeOf(v)
	if t == nil {
		return ""
	}
	if t.Kind() == reflect.Pointer {
		return t.Elem().Name()
	}
	return t.Name()
}

// newTraceID returns an X-Ray trace header as Lambda passes it: a root of
// the time and 96 random bits, a parent segment, not sampled.
func newTraceID(now time.Time) string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("Root=1-%08x-%x;Parent=%x;Sampled=0", now.Unix(), b[:12], b[12:])
}
