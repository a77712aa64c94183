package cli

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/localaws"
)

// awsEnv points the SDK's configuration chain at nothing but the process
// environment: a region, dummy credentials (the emulators check none), no
// shared files, no instance metadata, no endpoint overrides. Tests that
// call it cannot run in parallel.
func awsEnv(t *testing.T) {
	t.Helper()
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_REGION": localaws.Region, "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "",
		"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_SESSION_TOKEN": "",
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_DYNAMODB": "", "AWS_ENDPOINT_URL_SQS": "",
		"BATON_TABLE": "", "BATON_QUEUE_URL": "", "BATON_DLQ_URL": "", "BATON_MAX_RECEIVES": "", "BATON_JOB": "",
	} {
		t.Setenv(k, v)
	}
}

var exportLine = regexp.MustCompile(`(?m)^export ([A-Z_]+)=(.*)$`)

// TestAWSPathOnEmulators is the local AWS workflow of docs/deploying-aws.md: setup
// prints the environment, then invoke and run --once work from that
// environment alone (the SDK's chain resolves the endpoints).
func TestAWSPathOnEmulators(t *testing.T) {
	ddb, sqs := localaws.DynamoDB(t), localaws.SQS(t)
	awsEnv(t)
	unique := fmt.Sprintf("cli-%d", time.Now().UnixNano()%1e9)

	args := []string{"setup", "--dynamodb-endpoint", ddb.URL, "--sqs-endpoint", sqs.URL, "--table", unique, "--queue", unique, "--max-receives", "3"}
	code, out, errOut := runMain(t, args...)
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	vars := map[string]string{}
	for _, m := range exportLine.FindAllStringSubmatch(out, -1) {
		vars[m[1]] = m[2]
	}
	require.Equal(t, map[string]string{
		"BATON_TABLE":               unique,
		"BATON_QUEUE_URL":           sqs.URL + "/" + localaws.AccountID + "/" + unique,
		"BATON_DLQ_URL":             sqs.URL + "/" + localaws.AccountID + "/" + unique + "-dlq",
		"BATON_MAX_RECEIVES":        "3",
		"AWS_ENDPOINT_URL_DYNAMODB": ddb.URL,
		"AWS_ENDPOINT_URL_SQS":      sqs.URL,
	}, vars)
	// Again: idempotent, same output.
	code, again, _ := runMain(t, args...)
	require.Equal(t, ExitOK, code)
	require.Equal(t, out, again)

	for k, v := range vars {
		t.Setenv(k, v)
	}
	code, out, errOut = runMain(t, "invoke", "coordinator", "--backend", "aws", "--event", eventFile("coordinator-scheduled.json"), "--log", "warn", "--trigger-age", "0")
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, out, `"outcome":"opened","enqueued":7`)
	require.Contains(t, out, `"run":"fx@2026-11-21T12:01:00Z#1"`)
	code, out, _ = runMain(t, "invoke", "coordinator", "--backend", "aws", "--event", eventFile("coordinator-scheduled.json"), "--log", "warn", "--trigger-age", "0")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, `"outcome":"already_fanned_out"`, "the same tick is one run")
	code, out, errOut = runMain(t, "invoke", "consumer", "--backend", "aws", "--event", eventFile("consumer-batch.json"), "--log", "warn")
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.JSONEq(t, `{"batchItemFailures":[]}`, out)

	code, out, errOut = runMain(t, "run", "--once", "--backend", "aws", "--consumers", "2", "--timeout", "30s")
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, out, "table "+unique+" (aws)")
	for _, name := range append(append([]string{}, fx.Assets...), fx.DXY) {
		require.Regexp(t, `(?m)^`+name+`\s+SUCCEEDED\s+1\s`, out, name)
	}
	require.Regexp(t, `run fx@\S+#1: complete — 8 succeeded, 0 dead, 0 cancelled`, out)

	// A missing table is reported as such.
	code, _, errOut = runMain(t, "run", "--once", "--backend", "aws", "--table", unique+"-absent")
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, "does not exist (run 'baton setup')")
	require.False(t, strings.Contains(errOut, "panic"))
}

func TestAWSBackendNeedsARegion(t *testing.T) {
	awsEnv(t)
	t.Setenv("AWS_REGION", "")
	code, _, errOut := runMain(t, "setup", "--endpoint", "http://127.0.0.1:1")
	require.Equal(t, ExitUsage, code, errOut)
	require.Contains(t, errOut, "no AWS region")
}

func TestSetupUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"setup", "--max-receives", "0"}, "--max-receives must be at least 1"},
		{[]string{"setup", "--visibility", "500ms"}, "--visibility must be at least 1s"},
		{[]string{"setup", "--table", ""}, "--table must not be empty"},
		{[]string{"setup", "--queue", ""}, "--queue must not be empty"},
		{[]string{"setup", "--endpoint", "127.0.0.1:4567"}, `--endpoint: "127.0.0.1:4567" is not an http(s) URL`},
		{[]string{"setup", "extra"}, `unexpected argument "extra"`},
		{[]string{"setup", "--job", "fx", "--endpoint", "http://127.0.0.1:1"}, `unknown flag: --job`},
	} {
		code, _, errOut := runMain(t, tc.args...)
		require.Equal(t, ExitUsage, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://127.0.0.1:4576/123456789012/baton-work": "http://127.0.0.1:4576/123456789012/baton-work",
		"":          "''",
		"a b":       "'a b'",
		"it's":      `'it'\''s'`,
		"$(reboot)": "'$(reboot)'",
	} {
		require.Equal(t, want, shellQuote(in), in)
	}
}
