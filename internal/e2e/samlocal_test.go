package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend/awsbackend"
	"github.com/batonhq/baton/internal/lambdaapp"
	"github.com/batonhq/baton/internal/localaws"
	"github.com/batonhq/baton/internal/samtemplate"
)

// functionIDs are the template's logical ids of the two functions.
var functionIDs = map[lambdaapp.Function]string{
	lambdaapp.Coordinator: "CoordinatorFunction",
	lambdaapp.Consumer:    "ConsumerFunction",
}

// samLocalEnv is the environment 'sam local invoke' gives function f: the
// template's variables (Globals, then the function's own), each variable
// of the template overridden by the --env-vars file when withEnvJSON
// (env.json, the copy of env.json.example, with the stack's resources in
// it: here the emulators'), and SAM's own AWS_SAM_LOCAL. Without
// withEnvJSON it is the deployed function's configuration on res.
func samLocalEnv(t *testing.T, f lambdaapp.Function, res awsbackend.Resources, withEnvJSON bool) func(string) string {
	t.Helper()
	tpl, err := samtemplate.Load(filepath.Join("..", "..", "template.yaml"))
	require.NoError(t, err)
	vars := map[string]string{}
	add := func(m any) {
		vs, _ := m.(map[string]any)
		for k, v := range vs {
			s, _ := v.(string) // an intrinsic (!Ref) is given by env.json or the resources below
			vars[k] = s
		}
	}
	add(dig(tpl, "Globals", "Function", "Environment", "Variables"))
	add(dig(tpl, "Resources", functionIDs[f], "Properties", "Environment", "Variables"))
	if withEnvJSON {
		raw, err := os.ReadFile(filepath.Join("..", "..", "env.json.example"))
		require.NoError(t, err)
		var envJSON map[string]map[string]string
		require.NoError(t, json.Unmarshal(raw, &envJSON))
		for k, v := range envJSON[functionIDs[f]] {
			if _, declared := vars[k]; declared { // SAM overrides only what the template declares
				vars[k] = v
			}
		}
		vars["AWS_SAM_LOCAL"] = "true"
	}
	for _, kv := range res.Env() { // the stack's outputs
		if _, declared := vars[kv[0]]; declared {
			vars[kv[0]] = kv[1]
		}
	}
	return func(name string) string { return vars[name] }
}

func dig(v any, path ...string) any {
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

// handlerFromEnv builds f's handler as its cold start does (LoadConfig,
// ParamsOnAWS) on the emulators, wrapped by lambda.NewHandler as
// lambda.Start wraps it.
func handlerFromEnv(t *testing.T, f lambdaapp.Function, c awsbackend.Clients, getenv func(string) string) lambda.Handler {
	t.Helper()
	cfg, err := lambdaapp.LoadConfig(f, getenv)
	require.NoError(t, err)
	p := lambdaapp.ParamsOnAWS(cfg, c, lambdaapp.Env{GetenvFunc: getenv, Stdout: io.Discard, Stderr: io.Discard}, fx.Catalog(nil))
	if f == lambdaapp.Coordinator {
		h, err := lambdaapp.NewCoordinatorHandler(p)
		require.NoError(t, err)
		return lambda.NewHandler(h.Handle)
	}
	h, err := lambdaapp.NewConsumerHandler(p)
	require.NoError(t, err)
	return lambda.NewHandler(h.Handle)
}

func invokeAsRuntime(t *testing.T, h lambda.Handler, payload []byte, id string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: id})
	return h.Invoke(ctx, payload)
}

// TestSAMLocalInvokeEveryFixture runs every fixture of events/ through the
// Lambda handlers exactly as 'sam local invoke -e events/… --env-vars
// env.json' does (the template's variables overridden by
// env.json.example, the wall clock, the runtime's JSON path), on the
// emulators: each gives its documented outcome. The same fixtures sent to
// the deployed configuration (the template's variables alone) are refused
// as stale deliveries where they are scheduled triggers: their ticks are
// fixed, and env.json is what waives the bound for sam local.
func TestSAMLocalInvokeEveryFixture(t *testing.T) {
	t.Parallel()
	ddb, q := localaws.DynamoDB(t), localaws.SQS(t)
	c := awsbackend.NewClients(aws.Config{Region: ddb.Region, Credentials: ddb.Credentials},
		awsbackend.Endpoints{DynamoDB: ddb.URL, SQS: q.URL})
	res, err := awsbackend.Setup(t.Context(), c, awsbackend.SetupParams{Table: uniqueName("sam"), Queue: uniqueName("sam"), Visibility: 10 * time.Second})
	require.NoError(t, err)

	deployed := handlerFromEnv(t, lambdaapp.Coordinator, c, samLocalEnv(t, lambdaapp.Coordinator, res, false))
	for _, name := range []string{"coordinator-scheduled.json", "coordinator-scheduler.json"} {
		_, err := invokeAsRuntime(t, deployed, fixture(t, name), "deployed-"+name)
		require.ErrorContains(t, err, "a stale delivery", "%s: the deployed function's bound (6h)", name)
	}

	coordinator := handlerFromEnv(t, lambdaapp.Coordinator, c, samLocalEnv(t, lambdaapp.Coordinator, res, true))
	consumer := handlerFromEnv(t, lambdaapp.Consumer, c, samLocalEnv(t, lambdaapp.Consumer, res, true))
	coord := func(outcome, run string) func(t *testing.T, out []byte) {
		return func(t *testing.T, out []byte) {
			var r lambdaapp.CoordinatorResponse
			require.NoError(t, json.Unmarshal(out, &r))
			require.Equal(t, outcome, r.Outcome, string(out))
			require.Equal(t, run, r.Run, string(out))
		}
	}
	cons := func(failures ...string) func(t *testing.T, out []byte) {
		return func(t *testing.T, out []byte) {
			var r events.SQSEventResponse
			require.NoError(t, json.Unmarshal(out, &r))
			var ids []string
			for _, f := range r.BatchItemFailures {
				ids = append(ids, f.ItemIdentifier)
			}
			require.Equal(t, failures, ids, string(out))
		}
	}
	steps := []struct {
		file  string
		h     lambda.Handler
		check func(t *testing.T, out []byte)
	}{
		{"coordinator-scheduled.json", coordinator, coord("opened", "fx@2026-11-21T12:01:00Z#1")},
		{"coordinator-scheduler.json", coordinator, coord("already_fanned_out", "fx@2026-11-21T12:01:00Z#1")},
		{"coordinator-replay.json", coordinator, coord("already_fanned_out", "fx@2026-11-21T12:01:00Z#1")},
		{"coordinator-replay-force.json", coordinator, coord("opened", "fx@2026-11-21T12:01:00Z#2")},
		{"consumer-batch.json", consumer, cons()},
		{"consumer-batch-duplicates.json", consumer, cons()},
		// On SQS the record with an empty body cannot be forwarded (SQS
		// refuses an empty message body; no real record has one), so it is
		// retried, as the one whose receive count does not parse.
		{"consumer-batch-malformed.json", consumer, cons("2b3c4d5e-0000-4000-8000-000000000009", "2b3c4d5e-0000-4000-8000-00000000000a")},
		{"coordinator-submit.json", coordinator, coord("opened", "fx+desk-request-42#1")},
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "events", "*.json"))
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
		out, err := invokeAsRuntime(t, s.h, fixture(t, s.file), "sam-"+s.file)
		require.NoError(t, err, s.file)
		s.check(t, out)
	}
}
