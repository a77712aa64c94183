package cli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lambdaapp"
	"github.com/batonhq/baton/internal/lease"
)

const eventsDir = "../../events"

func eventFile(name string) string { return filepath.Join(eventsDir, name) }

// lambdaFailure is what a failed invocation prints.
type lambdaFailure struct {
	ErrorMessage string `json:"errorMessage"`
	ErrorType    string `json:"errorType"`
}

// TestInvokeEveryFixture invokes every file of events/ in-process on one
// embedded store, in an order that gives each its documented outcome.
func TestInvokeEveryFixture(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "baton.db")
	type check func(t *testing.T, out string)
	coordinator := func(outcome, run string, enqueued int) check {
		return func(t *testing.T, out string) {
			var r lambdaapp.CoordinatorResponse
			require.NoError(t, json.Unmarshal([]byte(out), &r), out)
			require.Equal(t, outcome, r.Outcome, out)
			require.Equal(t, run, r.Run, out)
			require.Equal(t, enqueued, r.Enqueued, out)
		}
	}
	consumer := func(failures ...string) check {
		return func(t *testing.T, out string) {
			var r events.SQSEventResponse
			require.NoError(t, json.Unmarshal([]byte(out), &r), out)
			var ids []string
			for _, f := range r.BatchItemFailures {
				ids = append(ids, f.ItemIdentifier)
			}
			require.Equal(t, failures, ids, out)
		}
	}
	steps := []struct {
		file      string
		checkFunc check
		code      int // a batch reporting failed records exits 1, as replay event does
	}{
		{"coordinator-scheduled.json", coordinator("opened", "fx@2026-11-21T12:01:00Z#1", 7), ExitOK},
		{"coordinator-scheduler.json", coordinator("already_fanned_out", "fx@2026-11-21T12:01:00Z#1", 0), ExitOK},
		{"coordinator-replay.json", coordinator("already_fanned_out", "fx@2026-11-21T12:01:00Z#1", 0), ExitOK},
		{"coordinator-replay-force.json", coordinator("opened", "fx@2026-11-21T12:01:00Z#2", 7), ExitOK},
		{"consumer-batch.json", consumer(), ExitOK},
		{"consumer-batch-duplicates.json", consumer(), ExitOK},
		// Malformed bodies are dead-lettered with their reason; the record
		// whose receive count does not parse is retried.
		{"consumer-batch-malformed.json", consumer("2b3c4d5e-0000-4000-8000-00000000000a"), ExitFailure},
		{"coordinator-submit.json", coordinator("opened", "fx+desk-request-42#1", 3), ExitOK},
	}
	files, err := filepath.Glob(filepath.Join(eventsDir, "*.json"))
	require.NoError(t, err)
	var all, covered []string
	for _, f := range files {
		all = append(all, filepath.Base(f))
	}
	for _, s := range steps {
		covered = append(covered, s.file)
	}
	require.ElementsMatch(t, all, covered, "every fixture in events/ is invoked")

	for _, s := range steps {
		function, _, _ := strings.Cut(s.file, "-")
		// As documented: the fixtures' ticks are fixed, so the age bound is waived.
		code, out, errOut := runMain(t, "invoke", function, "--event", eventFile(s.file), "--store", store, "--request-id", "req-"+s.file, "--trigger-age", "0")
		require.Equal(t, s.code, code, "%s\nstdout:\n%s\nstderr:\n%s", s.file, out, errOut)
		require.Equal(t, 1, strings.Count(out, "\n"), "one JSON line on stdout")
		s.checkFunc(t, out)
		// Logs carry the request id.
		require.Contains(t, errOut, `"function_request_id":"req-`+s.file+`"`, s.file)
	}
}

func TestInvokeReportsErrorsAsLambda(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "baton.db")
	cases := []struct {
		name     string
		args     []string
		wantType string
		wantMsg  string
	}{
		{"consumer event to the coordinator", []string{"coordinator", "--event", eventFile("consumer-batch.json")}, "", "bad coordinator trigger"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out, _ := runMain(t, append(append([]string{"invoke"}, tc.args...), "--store", store, "--log", "error")...)
			require.Equal(t, ExitFailure, code, out)
			var f lambdaFailure
			require.NoError(t, json.Unmarshal([]byte(out), &f), out)
			require.Contains(t, f.ErrorMessage, tc.wantMsg)
			require.NotEmpty(t, f.ErrorType)
			if tc.wantType != "" {
				require.Equal(t, tc.wantType, f.ErrorType)
			}
		})
	}
}

// TestInvokeRefusesBadEventFiles: an event file is one JSON value and
// nothing else, for both functions (the runtime's decoder would run the
// first value and drop the rest), and the consumer's is an SQS event.
// Either refusal is bad usage (exit 2) naming what is wrong, and nothing
// runs: the tick is still opened by the clean event afterwards.
func TestInvokeRefusesBadEventFiles(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "baton.db")
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	past := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute).Format(time.RFC3339)
	trigger := `{"job":"fx","scheduledTime":"` + past + `"}`
	rule := `{"version":"0","id":"e","detail-type":"Scheduled Event","source":"aws.events","time":"` + past + `","detail":{}}`
	batch, err := os.ReadFile(eventFile("consumer-batch.json"))
	require.NoError(t, err)
	for _, tc := range []struct {
		function, name, content, want string
	}{
		{"coordinator", "junk.json", trigger + " junk\n", `junk.json: unexpected "junk" after the JSON value at byte 52`},
		{"coordinator", "two.json", trigger + `{"force":true}`, `two.json: unexpected "{\"force\":true}" after the JSON value at byte 51`},
		{"coordinator", "brace.json", rule + "\n}\n", `brace.json: unexpected "}" after the JSON value at byte ` + strconv.Itoa(len(rule)+1)},
		{"coordinator", "empty.json", "", "empty.json: empty"},
		{"consumer", "batch-junk.json", string(batch) + "junk", `batch-junk.json: unexpected "junk" after the JSON value`},
		{"consumer", "coordinator.json", trigger, "not an SQS event but a coordinator event (fields job, scheduledTime): run it with 'baton invoke coordinator'"},
		{"consumer", "rule.json", rule, "not an SQS event but a coordinator event"},
		{"consumer", "empty.json", " \n", "empty.json: empty"},
		{"consumer", "text.json", "not JSON", "text.json: invalid character 'o' in literal null (expecting 'u') at byte 1"},
		{"consumer", "array.json", "[1]", `not an SQS event: want an object with "Records"`},
		{"consumer", "none.json", `{"Records":[]}`, `"Records" is empty`},
		{"consumer", "s3.json", `{"Records":[{"eventSource":"aws:s3"}]}`, `record 0 comes from "aws:s3", want "aws:sqs"`},
	} {
		t.Run(tc.function+"/"+tc.name, func(t *testing.T) {
			path := write(tc.function+"-"+tc.name, tc.content)
			code, out, errOut := runMain(t, "invoke", tc.function, "--event", path, "--store", store, "--log", "error")
			require.Equal(t, ExitUsage, code, "%s\n%s", out, errOut)
			require.Empty(t, out, "nothing ran")
			require.Contains(t, errOut, tc.want)
		})
	}
	code, out, errOut := runMain(t, "invoke", "coordinator", "--event", write("clean.json", trigger), "--store", store, "--log", "error")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, `"outcome":"opened"`, "no refused file opened the tick")
}

func TestInvokeUsage(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "baton.db")
	ev := eventFile("coordinator-scheduled.json")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"invoke", "--event", ev}, "which function?"},
		{[]string{"invoke", "producer", "--event", ev}, `unknown function "producer"`},
		{[]string{"invoke", "coordinator"}, "--event FILE is required"},
		{[]string{"invoke", "coordinator", "--event", filepath.Join(t.TempDir(), "absent.json")}, "no such file"},
		{[]string{"invoke", "coordinator", "--event", ev, "--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"invoke", "coordinator", "--event", ev, "--log", "loud"}, `"loud" is not a level`},
		{[]string{"invoke", "coordinator", "--event", ev, "extra"}, `unexpected argument "extra"`},
		{[]string{"invoke", "coordinator", "--event", ev, "--job", "nope", "--store", store}, `unknown job "nope"`},
		{[]string{"invoke", "coordinator", "--event", ev, "--backend", "aws", "--table", ""}, "no table: set --table or BATON_TABLE"},
		{[]string{"invoke", "coordinator", "--event", ev, "--backend", "aws", "--table", "t", "--queue-url", ""}, "no work queue: set --queue-url or BATON_QUEUE_URL"},
		{[]string{"invoke", "coordinator", "--event", ev, "--backend", "aws", "--table", "t", "--queue-url", "http://q", "--sqs-endpoint", "localhost:1"}, `--sqs-endpoint: "localhost:1" is not an http(s) URL`},
		{[]string{"invoke", "coordinator", "--event", ev, "--backend", "aws", "--table", "t", "--queue-url", "http://q", "--receive-wait", "1m"}, "--receive-wait must be within 0..20s"},
	} {
		code, _, errOut := runMain(t, tc.args...)
		require.Equal(t, ExitUsage, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
	}
	// The function may also follow the flags.
	code, out, errOut := runMain(t, "invoke", "--event", ev, "--store", store, "--log", "error", "--trigger-age", "0", "coordinator")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, `"outcome":"opened"`)
	require.Regexp(t, `"request_id":"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"`, out, "a UUID by default")
}

// handlerFunc is a lambda.Handler made of a function.
type handlerFunc func(ctx context.Context, payload []byte) ([]byte, error)

func (f handlerFunc) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return f(ctx, payload)
}

type customError struct{}

func (*customError) Error() string { return "custom" }

func TestInvokeLikeTheRuntime(t *testing.T) {
	t.Parallel()
	t.Run("context", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		out, ierr := invoke(t.Context(), handlerFunc(func(ctx context.Context, payload []byte) ([]byte, error) {
			lc, ok := lambdacontext.FromContext(ctx)
			require.True(t, ok)
			deadline, ok := ctx.Deadline()
			require.True(t, ok)
			require.WithinDuration(t, start.Add(time.Minute), deadline, 5*time.Second)
			return []byte(`"` + lc.AwsRequestID + `:` + string(payload) + `"`), nil
		}), []byte("p"), "id-1", time.Minute)
		require.Nil(t, ierr)
		require.Equal(t, `"id-1:p"`, string(out))
	})
	t.Run("error type is the dynamic type's name", func(t *testing.T) {
		t.Parallel()
		_, ierr := invoke(t.Context(), handlerFunc(func(context.Context, []byte) ([]byte, error) {
			return nil, &customError{}
		}), nil, "id", time.Minute)
		require.Equal(t, &messages.InvokeResponse_Error{Message: "custom", Type: "customError"}, ierr)
		_, ierr = invoke(t.Context(), handlerFunc(func(context.Context, []byte) ([]byte, error) {
			return nil, errors.New("plain")
		}), nil, "id", time.Minute)
		require.Equal(t, &messages.InvokeResponse_Error{Message: "plain", Type: "errorString"}, ierr)
	})
	t.Run("panic", func(t *testing.T) {
		t.Parallel()
		_, ierr := invoke(t.Context(), handlerFunc(func(context.Context, []byte) ([]byte, error) {
			panic("boom")
		}), nil, "id", time.Minute)
		require.Equal(t, &messages.InvokeResponse_Error{Message: "boom", Type: "string"}, ierr)
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		defer close(release)
		_, ierr := invoke(t.Context(), handlerFunc(func(context.Context, []byte) ([]byte, error) {
			<-release // ignores its deadline
			return []byte("late"), nil
		}), nil, "id-2", 20*time.Millisecond)
		require.NotNil(t, ierr)
		require.Equal(t, timeoutErrorType, ierr.Type)
		require.Regexp(t, regexp.MustCompile(`^RequestId: id-2 Error: Task timed out after 0\.02 seconds$`), ierr.Message)
	})
}

// baton invoke coordinator records a refused acquisition, as the Lambda
// and run paths do.
func TestInvokeRecordsContention(t *testing.T) {
	t.Parallel()
	testInvokeRecordsContention(t, newSQLiteFixture(t))
}

func testInvokeRecordsContention(t *testing.T, f *opsFixture) {
	b := f.b
	_, err := b.Leases.Acquire(t.Context(), lease.AcquireParams{Job: "fx", Owner: "rival", TTL: time.Hour, Now: time.Now()})
	require.NoError(t, err)

	code, out, errOut := f.main("invoke", "coordinator", "--event", "../../events/coordinator-scheduler.json", "--log", "error", "--trigger-age", "0")
	require.Equal(t, ExitFailure, code, "%s\n%s", out, errOut)
	require.Contains(t, out, "lease held by rival", "the tick is not run: Lambda's retry would run it")
	c, err := b.Leases.(lease.ContentionCounter).Contention(t.Context(), "fx")
	require.NoError(t, err)
	require.EqualValues(t, 1, c.Count)
	require.Equal(t, "rival", c.Holder.Owner)
}

// TestInvokeAppliesTheTriggerAgeBound: invoke refuses a scheduled trigger
// older than the bound the coordinator function applies (6h by default),
// exempts a replay, and waives the bound with --trigger-age 0, the
// documented way of running the fixtures.
func TestInvokeAppliesTheTriggerAgeBound(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "baton.db")
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	old := time.Now().UTC().Truncate(time.Minute).Add(-7 * time.Hour).Format(time.RFC3339)
	scheduler := write("scheduler.json", `{"job":"fx","scheduledTime":"`+old+`"}`)
	rule := write("rule.json", `{"version":"0","id":"e","detail-type":"Scheduled Event","source":"aws.events","time":"2016-11-21T12:01:00Z","detail":{}}`)
	for _, file := range []string{scheduler, rule, eventFile("coordinator-scheduled.json"), eventFile("coordinator-scheduler.json")} {
		code, out, errOut := runMain(t, "invoke", "coordinator", "--event", file, "--store", store, "--log", "error")
		require.Equal(t, ExitFailure, code, "%s: %s\n%s", file, out, errOut)
		var f lambdaFailure
		require.NoError(t, json.Unmarshal([]byte(out), &f), out)
		require.Contains(t, f.ErrorMessage, "beyond the bound of 6h0m0s for scheduled triggers: a stale delivery", file)
		require.Contains(t, f.ErrorMessage, "--trigger-age 0", "the error says how to waive the bound")
	}
	// A replay of the same old tick is exempt.
	replay := write("replay.json", `{"job":"fx","scheduledTime":"`+old+`","force":false}`)
	code, out, errOut := runMain(t, "invoke", "coordinator", "--event", replay, "--store", store, "--log", "error")
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	require.Contains(t, out, `"outcome":"opened"`)
	// A tighter bound refuses what the default accepts; 0 waives it.
	code, out, _ = runMain(t, "invoke", "coordinator", "--event", scheduler, "--store", store, "--log", "error", "--trigger-age", "1h")
	require.Equal(t, ExitFailure, code, out)
	require.Contains(t, out, "beyond the bound of 1h0m0s")
	code, out, errOut = runMain(t, "invoke", "coordinator", "--event", rule, "--store", store, "--log", "error", "--trigger-age", "0")
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
	require.Contains(t, out, `"run":"fx@2016-11-21T12:01:00Z#1"`)
	code, _, errOut = runMain(t, "invoke", "coordinator", "--event", rule, "--store", store, "--trigger-age", "-1m")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "--trigger-age must not be negative")
}

// TestReplayEventAppliesTheTriggerAgeBound: replay event applies the same
// bound: a captured rule event older than it is refused, a replay payload
// is exempt.
func TestReplayEventAppliesTheTriggerAgeBound(t *testing.T) {
	t.Parallel()
	f := newSQLiteFixture(t)
	old := f.tick(1).Add(-7 * time.Hour)
	rule := fixtureAt(t, "coordinator-scheduled.json", rfc(old))
	code, out, errOut := f.main("replay", "event", rule, "--log", "error")
	require.Equal(t, ExitFailure, code, "%s\n%s", out, errOut)
	require.Contains(t, errOut, "a stale delivery")
	force := fixtureAt(t, "coordinator-replay-force.json", rfc(old))
	code, out, errOut = f.main("replay", "event", force, "--log", "error")
	require.Equal(t, ExitOK, code, "%s\n%s", out, errOut)
}
