package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/spf13/pflag"

	"github.com/batonhq/baton/internal/lambdaapp"
)

const replayEventSynopsis = `replay event FILE [flags]

Replays a Lambda event — any file of events/ or an event captured from a
function's logs — through the handler it is meant for, in this process, on
the selected backend: an SQS event (Records from aws:sqs) goes to the
consumer function's handler, anything else to the coordinator function's
(an EventBridge rule event, a Scheduler payload or a manual replay
payload; the coordinator rejects other shapes, naming what is wrong). The
handler runs through the Lambda library's JSON path with the function's
timeout as deadline, and its JSON response is printed.

After a coordinator event the command waits for the tick's run to settle
(--wait, with consumers in this process on the embedded store and on
PostgreSQL), as 'replay tick' does. Event times in the future are refused
by the coordinator (beyond its trigger skew).

Exit status: 0 when the handler succeeded (and, for the consumer, reported
no failed record); 1 when it returned an error, reported failed records, or
the run did not settle complete; 2 for bad usage or an unreadable file.`

// Function timeouts of template.yaml: the deadline of an in-process invoke.
const (
	coordinatorTimeout = 60 * time.Second
	consumerTimeout    = 30 * time.Second
)

func defineReplayEvent(e *env, fs *pflag.FlagSet) runFunc {
	var f replayFlags
	f.register(e, fs)
	return func(ctx context.Context, files []string) error { return replayEvent(ctx, e, &f, files) }
}

func replayEvent(ctx context.Context, e *env, f *replayFlags, files []string) error {
	if len(files) != 1 {
		return usagef("replay event takes one event file (e.g. events/coordinator-scheduled.json), got %d", len(files))
	}
	file := files[0]
	if err := f.check(); err != nil {
		return err
	}
	payload, err := os.ReadFile(file)
	if err != nil {
		return usagef("read event: %v", err)
	}
	if !json.Valid(payload) {
		return usagef("event %s is not JSON", file)
	}
	j, err := lookupJob(e.catalog, f.common.job)
	if err != nil {
		return err
	}
	isSQS := sqsEvent(payload)
	r, err := f.start(ctx, e, j.Name, f.wait && !isSQS)
	if err != nil {
		return err
	}
	defer r.close()
	logger, err := e.newLogger(f.logLevel)
	if err != nil {
		return err
	}
	p := lambdaapp.HandlerParams{
		Jobs: r.eng.Coordinator.Jobs, Leases: r.eng.Coordinator.Leases, Ledger: r.b.Ledger, Effects: r.b.Effects,
		Queue: r.b.Work, MaxReceives: r.b.MaxReceives, Logger: logger, FunctionName: "replay:" + operatorOwner(),
	}
	if r.b.DeadLetter != nil {
		p.DeadLetter = r.b.DeadLetter
	}

	fn, timeout := lambdaapp.Coordinator, coordinatorTimeout
	if isSQS {
		fn, timeout = lambdaapp.Consumer, consumerTimeout
	}
	h, err := newHandler(fn, p)
	if err != nil {
		return err
	}
	out, ierr := invoke(ctx, h, payload, lambdaapp.NewRequestID(), timeout)
	if ierr != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w", ctx.Err())
		}
		msg, _ := json.Marshal(ierr)
		e.printResponse(msg)
		fmt.Fprintf(e.stderr, "baton replay event: the %s handler failed: %s\n", fn, ierr.Message)
		return errFailed
	}
	e.printResponse(out)

	if isSQS {
		var resp events.SQSEventResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			return fmt.Errorf("consumer response: %w", err)
		}
		if n := len(resp.BatchItemFailures); n > 0 {
			fmt.Fprintf(e.stderr, "baton replay event: %d record(s) failed (SQS would redeliver them; malformed ones went to the dead-letter queue with their reason)\n", n)
			return errFailed
		}
		return nil
	}
	var resp lambdaapp.CoordinatorResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		return fmt.Errorf("coordinator response: %w", err)
	}
	if resp.Outcome == "skipped" || !f.wait {
		return nil
	}
	if resp.Source == "submission" {
		fmt.Fprintf(e.stderr, "baton replay event: submission run %s; follow it with baton status --run %s\n", resp.Run, resp.Run)
		return nil
	}
	return waitAndReport(ctx, e, r, resp.Nominal, f.timeout)
}

// printResponse prints a handler's JSON response, or with --json sets it
// as the report's "response".
func (e *env) printResponse(out []byte) {
	if e.json {
		e.set("response", json.RawMessage(out))
		return
	}
	fmt.Fprintf(e.stdout, "%s\n", out)
}

// sqsEvent reports whether payload is an SQS event: Records whose first
// eventSource is aws:sqs.
func sqsEvent(payload []byte) bool {
	var ev struct {
		Records []struct {
			EventSource string `json:"eventSource"`
		} `json:"Records"`
	}
	return json.Unmarshal(payload, &ev) == nil && len(ev.Records) > 0 && ev.Records[0].EventSource == "aws:sqs"
}
