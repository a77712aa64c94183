package ui_test

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/cli"
	"github.com/batonhq/baton/internal/localaws"
)

// TestOnAWSEmulators serves the dashboard on the aws engine (DynamoDB and
// SQS on the local test servers): a run made by `baton run --once` on its
// pages, a hostile dead letter escaped with its prediction, and a redrive
// through its confirmation.
func TestOnAWSEmulators(t *testing.T) {
	ddb, sq := localaws.DynamoDB(t), localaws.SQS(t)
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_REGION": localaws.Region, "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "",
		"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_SESSION_TOKEN": "",
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_DYNAMODB": "", "AWS_ENDPOINT_URL_SQS": "",
		"BATON_TABLE": "", "BATON_QUEUE_URL": "", "BATON_DLQ_URL": "", "BATON_MAX_RECEIVES": "", "BATON_JOB": "", "BATON_UI_TOKEN": "",
	} {
		t.Setenv(k, v)
	}
	catalog := fx.Catalog(nil)
	run := func(args ...string) string {
		var out, errOut strings.Builder
		code := cli.Main(t.Context(), catalog, args, &out, &errOut)
		require.Equal(t, cli.ExitOK, code, "%v\nstdout:\n%s\nstderr:\n%s", args, out.String(), errOut.String())
		return out.String()
	}
	unique := fmt.Sprintf("ui-%d", time.Now().UnixNano()%1e9)
	out := run("setup", "--dynamodb-endpoint", ddb.URL, "--sqs-endpoint", sq.URL, "--table", unique, "--queue", unique, "--max-receives", "3")
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^export ([A-Z_]+)=(.*)$`).FindAllStringSubmatch(out, -1) {
		vars[m[1]] = m[2]
		t.Setenv(m[1], m[2])
	}
	require.NotEmpty(t, vars["BATON_DLQ_URL"], out)
	run("run", "--once", "--backend", "aws", "--consumers", "2", "--timeout", "30s", "--log", "warn")
	_, err := localaws.SQSClient(t).SendMessage(t.Context(), &sqs.SendMessageInput{
		QueueUrl: aws.String(vars["BATON_DLQ_URL"]), MessageBody: aws.String(hostile),
	})
	require.NoError(t, err)

	base := serveUI(t, catalog, "--backend", "aws")
	c := withJar(t)
	code, body := get(t, c, base+"/jobs/fx")
	require.Equal(t, http.StatusOK, code, body)
	m := regexp.MustCompile(`data-run="([^"]+)" data-state="complete"`).FindStringSubmatch(body)
	require.NotNil(t, m, body)
	code, body = get(t, c, base+"/run?"+url.Values{"id": {m[1]}}.Encode())
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, 8, strings.Count(body, `data-state="SUCCEEDED" data-attempts="1"`), "every item on the timeline")
	code, body = get(t, c, base+"/jobs/fx/lease")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `id="lease-state">free`)
	require.Contains(t, body, `id="locks-unsupported">Listing locks is not supported on aws`, "DynamoDB keeps no index of the lock keys")

	code, body = get(t, c, base+"/dlq")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "rejected again (malformed)")
	require.NotContains(t, body, "<script>window.__pwned")

	code, body = get(t, c, base+"/confirm?kind=redrive")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "Moves every message of the dead-letter queue (1 listed below)")
	f := url.Values{"kind": {"redrive"}, "token": {tokenField.FindStringSubmatch(body)[1]}}
	code, body = post(t, c, base+"/act", f)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "moved 1 message(s) from the dead-letter queue to the work queue")
}
