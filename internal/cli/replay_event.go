package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/spf13/pflag"

	"github.com/batonhq/baton/internal/lambdaapp"
	"github.com/batonhq/baton/internal/strictjson"
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
by the coordinator (beyond its trigger skew), and so are scheduled triggers
(rule event, Scheduler payload) older than --trigger-age, as the deployed
function refuses them: replay such a tick with 'replay tick', or waive
the bound with --trigger-age 0. A replay payload ("force") is exempt.

Exit status: 0 when the handler succeeded (and, for the consumer, reported
no failed record); 1 when it returned an error, reported failed records, or
the run did not settle complete; 2 for bad usage, an unreadable file, or
one that is not one JSON value and nothing else (the error names what
follows the value).`

// Function timeouts of template.yaml: the deadline of an in-process invoke.
const (
	coordinatorTimeout = 60 * time.Second
	consumerTimeout    = 30 * time.Second
)

func defineReplayEvent(e *env, fs *pflag.FlagSet) runFunc {
	var f replayFlags
	f.register(e, fs)
	var age triggerAgeFlag
	age.register(fs)
	return func(ctx context.Context, files []string) error { return replayEvent(ctx, e, &f, &age, files) }
}

func replayEvent(ctx context.Context, e *env, f *replayFlags, ageFlag *triggerAgeFlag, files []string) error {
	if len(files) != 1 {
		return usagef("replay event takes one event file (e.g. events/coordinator-scheduled.json), got %d", len(files))
	}
	file := files[0]
	if err := f.check(); err != nil {
		return err
	}
	age, err := ageFlag.value()
	if err != nil {
		return err
	}
	payload, err := readEvent(file)
	if err != nil {
		return err
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
		TriggerAge: age,
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

// readEvent reads an event file and checks that it holds one JSON value
// and nothing else (strictjson.Value), as every command that runs a
// handler on a file does: the Lambda runtime's decoder would read the
// first value and ignore what follows, so a file with a stray brace or a
// second object would run on its first half. A bad file is a usage error
// (exit status 2) naming what is wrong.
func readEvent(file string) ([]byte, error) {
	payload, err := os.ReadFile(file)
	if err != nil {
		return nil, usagef("read event: %v", err)
	}
	if err := strictjson.Value(payload); err != nil {
		return nil, usagef("event %s: %s", file, strings.TrimPrefix(err.Error(), strictjson.ErrNotOneValue.Error()+": "))
	}
	return payload, nil
}

// checkSQSEvent returns nil when payload (one JSON value) is an SQS event
// as the consumer function receives it: an object whose "Records" are
// one or more records from aws:sqs. Otherwise the error says what the
// payload is instead (a coordinator event named as such), for
// 'baton invoke consumer', whose handler would otherwise take any object
// for an empty batch and succeed.
func checkSQSEvent(payload []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(payload, &fields); err != nil || fields == nil {
		return fmt.Errorf("not an SQS event: want an object with \"Records\", got %s", strictjson.Quote(abbreviate(payload)))
	}
	raw, ok := fields["Records"]
	if !ok {
		names := slices.Sorted(maps.Keys(fields))
		for _, n := range []string{"job", "source", "detail-type", "scheduledTime", "submit"} {
			if slices.Contains(names, n) {
				return fmt.Errorf("not an SQS event but a coordinator event (fields %s): run it with 'baton invoke coordinator'", strings.Join(names, ", "))
			}
		}
		return fmt.Errorf("not an SQS event: no \"Records\" (fields: %s)", strings.Join(names, ", "))
	}
	var records []struct {
		EventSource *string `json:"eventSource"`
	}
	if err := json.Unmarshal(raw, &records); err != nil {
		return fmt.Errorf("not an SQS event: \"Records\" is not an array of records: %v", err)
	}
	if len(records) == 0 {
		return errors.New("not an SQS event: \"Records\" is empty (Lambda never invokes a consumer with no record)")
	}
	for i, r := range records {
		switch {
		case r.EventSource == nil:
			return fmt.Errorf("not an SQS event: record %d has no \"eventSource\"", i)
		case *r.EventSource != "aws:sqs":
			return fmt.Errorf("not an SQS event: record %d comes from %s, want \"aws:sqs\"", i, strictjson.Quote(*r.EventSource))
		}
	}
	return nil
}

// abbreviate returns at most 40 bytes of b.
func abbreviate(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
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
