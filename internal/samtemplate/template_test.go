package samtemplate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/lambdaapp"
	"github.com/batonhq/baton/internal/samtemplate"
)

// The functions of the template and the Lambda functions they are.
var functions = map[string]lambdaapp.Function{
	"CoordinatorFunction": lambdaapp.Coordinator,
	"ConsumerFunction":    lambdaapp.Consumer,
}

type bundle struct {
	root string         // repository root
	tpl  map[string]any // the decoded template
}

func setup(t *testing.T) bundle {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	tpl, err := samtemplate.Load(filepath.Join(root, "template.yaml"))
	require.NoError(t, err)
	return bundle{root: root, tpl: tpl}
}

// at walks maps by keys; it fails the test when a key is missing.
func at(t *testing.T, v any, path ...string) any {
	t.Helper()
	for i, k := range path {
		m, ok := v.(map[string]any)
		require.True(t, ok, "%s is not a mapping", strings.Join(path[:i], "."))
		v, ok = m[k]
		require.True(t, ok, "%s is missing", strings.Join(path[:i+1], "."))
	}
	return v
}

// lookup is at without failing: ok is false when a key is missing.
func lookup(v any, path ...string) (any, bool) {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func (b bundle) resource(t *testing.T, name string) map[string]any {
	t.Helper()
	r, ok := at(t, b.tpl, "Resources", name).(map[string]any)
	require.True(t, ok, "resource %s is not a mapping", name)
	return r
}

// fnProp is a function property, falling back to Globals.Function.
func (b bundle) fnProp(t *testing.T, fn, prop string) any {
	t.Helper()
	if v, ok := lookup(b.resource(t, fn), "Properties", prop); ok {
		return v
	}
	return at(t, b.tpl, "Globals", "Function", prop)
}

// env is the function's environment: Globals merged with its own.
func (b bundle) env(t *testing.T, fn string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, vars := range []any{
		func() any { v, _ := lookup(b.tpl, "Globals", "Function", "Environment", "Variables"); return v }(),
		func() any { v, _ := lookup(b.resource(t, fn), "Properties", "Environment", "Variables"); return v }(),
	} {
		if m, ok := vars.(map[string]any); ok {
			for k, v := range m {
				out[k] = v
			}
		}
	}
	return out
}

func number(t *testing.T, v any) int64 {
	t.Helper()
	switch n := v.(type) {
	case int64:
		return n
	case json.Number: // the expanded template
		i, err := n.Int64()
		require.NoError(t, err, "%s is not an integer", n)
		return i
	case string: // CloudFormation accepts numbers as strings
		var i int64
		_, err := fmt.Sscan(n, &i)
		require.NoError(t, err, "%q is not a number", n)
		return i
	}
	t.Fatalf("%v (%T) is not a number", v, v)
	return 0
}

func getAtt(res, attr string) map[string]any {
	return map[string]any{"Fn::GetAtt": []any{res, attr}}
}

func ref(name string) map[string]any { return map[string]any{"Ref": name} }

func TestFunctions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, "AWS::Serverless-2016-10-31", b.tpl["Transform"])
	for fn := range functions {
		t.Run(fn, func(t *testing.T) {
			t.Parallel()
			r := b.resource(t, fn)
			require.Equal(t, "AWS::Serverless::Function", r["Type"])
			require.Equal(t, "makefile", at(t, r, "Metadata", "BuildMethod"))
			require.Equal(t, "provided.al2023", b.fnProp(t, fn, "Runtime"))
			require.Equal(t, []any{"arm64"}, b.fnProp(t, fn, "Architectures"))
			require.Equal(t, "bootstrap", b.fnProp(t, fn, "Handler"))
			require.Equal(t, ".", b.fnProp(t, fn, "CodeUri"))
			require.Positive(t, number(t, b.fnProp(t, fn, "Timeout")))
		})
	}
}

// TestBuildTargets expands each function's make target through the root
// Makefile (which includes functions/lambda.mk) and checks the command.
func TestBuildTargets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not on PATH")
	}
	for fn, f := range functions {
		t.Run(fn, func(t *testing.T) {
			t.Parallel()
			out, err := exec.Command("make", "-s", "-n", "-C", b.root, "build-"+fn, "ARTIFACTS_DIR=/artifacts").CombinedOutput()
			require.NoError(t, err, "%s", out)
			cmd := strings.TrimSpace(string(out))
			for _, want := range []string{
				"GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0", " build ", "-tags lambda.norpc", "-trimpath",
				"-ldflags='-s -w'", "-o /artifacts/bootstrap", "./functions/" + string(f),
			} {
				require.Contains(t, cmd, want)
			}
		})
	}
}

func TestSchedule(t *testing.T) {
	t.Parallel()
	b := setup(t)
	catalog := fx.Catalog(nil)
	require.NoError(t, samtemplate.CheckSchedules(b.tpl, catalog), "the template schedules every job of baton's catalog")

	schedules, err := samtemplate.Schedules(b.tpl, catalog.Names())
	require.NoError(t, err)
	require.Len(t, schedules, 1)
	require.Equal(t, samtemplate.Schedule{Function: "CoordinatorFunction", Event: "Tick", Type: "ScheduleV2",
		Expression: "rate(1 minute)", TimeZone: "UTC", State: "ENABLED", Job: fx.Name}, schedules[0], "the parameters' defaults")

	// A fan-out cut by the deadline returns an error; a retry resumes it.
	retries := at(t, b.resource(t, "CoordinatorFunction"), "Properties", "EventInvokeConfig", "MaximumRetryAttempts")
	require.GreaterOrEqual(t, number(t, retries), int64(1))
}

// The check fails when the template and the catalog drift apart, naming
// the job.
func TestScheduleDrift(t *testing.T) {
	t.Parallel()
	b := setup(t)
	noop := baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })
	equities := baton.Job{Name: "equities", Schedule: "rate(5 minutes)", Assets: []string{"AAPL"}, Processor: noop}

	// A job of the catalog without a schedule.
	err := samtemplate.CheckSchedules(b.tpl, baton.MustCatalog(fx.Job(nil), equities))
	require.ErrorContains(t, err, `job equities: no schedule in the template`)
	require.ErrorContains(t, err, `"rate(5 minutes)"`)

	// A job without a schedule (on demand, or chained) needs none, and
	// must have none: it would tick without a parent.
	onDemand := baton.Job{Name: "reindex", Assets: []string{"all"}, Processor: noop}
	require.NoError(t, samtemplate.CheckSchedules(b.tpl, baton.MustCatalog(fx.Job(nil), onDemand)))
	unscheduledFx := fx.Job(nil)
	unscheduledFx.Schedule = ""
	err = samtemplate.CheckSchedules(b.tpl, baton.MustCatalog(unscheduledFx))
	require.ErrorContains(t, err, `job fx has no schedule (it runs on demand or by a chain), but the template's CoordinatorFunction.Tick ticks it`)

	// A schedule of a job the catalog lacks.
	err = samtemplate.CheckSchedules(b.tpl, baton.MustCatalog(equities))
	require.ErrorContains(t, err, `job "fx" is not in this deployment's catalog`)

	// The job's schedule changed in code but not in the template.
	changed := fx.Job(nil)
	changed.Schedule = "rate(2 minutes)"
	err = samtemplate.CheckSchedules(b.tpl, baton.MustCatalog(changed))
	require.ErrorContains(t, err, `job fx: the template's schedule CoordinatorFunction.Tick is "rate(1 minute)", the job's is "rate(2 minutes)"`)

	// Two jobs, both scheduled: rule events name theirs by constant input;
	// a bare rule event is refused when the catalog has several jobs.
	tpl, err := samtemplate.Decode([]byte(`
Resources:
  Coord:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        Fx:
          Type: ScheduleV2
          Properties:
            ScheduleExpression: rate(1 minute)
            Input: '{"job": "fx", "scheduledTime": "<aws.scheduler.scheduled-time>"}'
        Equities:
          Type: Schedule
          Properties:
            Schedule: rate(5 minutes)
            Input: '{"job": "equities"}'
`))
	require.NoError(t, err)
	require.NoError(t, samtemplate.CheckSchedules(tpl, baton.MustCatalog(fx.Job(nil), equities)))
	tpl, err = samtemplate.Decode([]byte(`
Resources:
  Coord:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        Bare:
          Type: Schedule
          Properties:
            Schedule: rate(5 minutes)
`))
	require.NoError(t, err)
	err = samtemplate.CheckSchedules(tpl, baton.MustCatalog(fx.Job(nil), equities))
	require.ErrorContains(t, err, `Coord event Bare: bad coordinator trigger: rule event: it names no job and the catalog has 2 (equities, fx)`)
	require.NoError(t, samtemplate.CheckSchedules(tpl, baton.MustCatalog(equities)), "one job: a bare rule event is its")

	// The job's time zone must be the schedule's; a rule has none.
	zoned := fx.Job(nil)
	zoned.TimeZone = "Europe/London"
	err = samtemplate.CheckSchedules(b.tpl, baton.MustCatalog(zoned))
	require.ErrorContains(t, err, `job fx: the template's schedule CoordinatorFunction.Tick is read in time zone UTC, the job's in Europe/London: set ScheduleExpressionTimezone to "Europe/London"`)
	err = samtemplate.CheckSchedules(tpl, baton.MustCatalog(func() baton.Job { e := equities; e.TimeZone = "Asia/Tokyo"; return e }()))
	require.ErrorContains(t, err, `job equities: its TimeZone is Asia/Tokyo, but Coord.Bare is an EventBridge rule, which reads cron in UTC`)

	// Parameters: their defaults are checked; a !Ref to something else,
	// or a state that is neither, is named.
	tpl, err = samtemplate.Decode([]byte(`
Parameters:
  Expr: {Type: String, Default: "rate(1 minute)"}
  Zone: {Type: String, Default: Europe/London}
  State: {Type: String, Default: PAUSED}
Resources:
  Coord:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        Fx:
          Type: ScheduleV2
          Properties:
            ScheduleExpression: !Ref Expr
            ScheduleExpressionTimezone: !Ref Zone
            State: !Ref State
            Input: '{"job": "fx", "scheduledTime": "<aws.scheduler.scheduled-time>"}'
`))
	require.NoError(t, err)
	err = samtemplate.CheckSchedules(tpl, baton.MustCatalog(zoned))
	require.ErrorContains(t, err, `job fx: the template's schedule Coord.Fx has State "PAUSED": want ENABLED or DISABLED`)
	tpl, err = samtemplate.Decode([]byte(`
Resources:
  Coord:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        Fx:
          Type: ScheduleV2
          Properties:
            ScheduleExpression: !Ref Missing
            Input: '{"job": "fx", "scheduledTime": "<aws.scheduler.scheduled-time>"}'
`))
	require.NoError(t, err)
	err = samtemplate.CheckSchedules(tpl, baton.MustCatalog(fx.Job(nil)))
	require.ErrorContains(t, err, `Coord event Fx: schedule expression: !Ref Missing is not a parameter of the template`)
}

func TestEnvironment(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for fn, f := range functions {
		t.Run(fn, func(t *testing.T) {
			t.Parallel()
			env := b.env(t, fn)
			read := map[string]bool{}
			for _, v := range lambdaapp.Variables(f) {
				read[v.Name] = true
				require.Contains(t, env, v.Name, "%s reads %s (%s)", fn, v.Name, v.Usage)
			}
			for k := range env {
				if strings.HasPrefix(k, "BATON_") {
					require.True(t, read[k], "%s sets %s, which the function does not read", fn, k)
				}
			}
			require.Equal(t, ref("Table"), env[lambdaapp.EnvTable])
			// Two stacks never merge: logs and metrics name the stack.
			require.Equal(t, ref("AWS::StackName"), env[lambdaapp.EnvService])
			require.True(t, isBatonNamespace(b.tpl, env[lambdaapp.EnvNamespace]), "%s: %s is a !Ref of the namespace parameter", fn, lambdaapp.EnvNamespace)
			require.Equal(t, ref("WorkQueue"), env[lambdaapp.EnvQueueURL])
			if f == lambdaapp.Consumer {
				require.Equal(t, ref("DeadLetterQueue"), env[lambdaapp.EnvDLQURL])
			}
		})
	}
}

func TestQueues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	work := at(t, b.resource(t, "WorkQueue"), "Properties").(map[string]any)
	dlq := at(t, b.resource(t, "DeadLetterQueue"), "Properties").(map[string]any)
	require.Equal(t, true, work["SqsManagedSseEnabled"])
	require.Equal(t, true, dlq["SqsManagedSseEnabled"])

	redrive := at(t, work, "RedrivePolicy")
	require.Equal(t, getAtt("DeadLetterQueue", "Arn"), at(t, redrive, "deadLetterTargetArn"))
	maxReceives := number(t, at(t, redrive, "maxReceiveCount"))
	require.GreaterOrEqual(t, maxReceives, int64(5))
	require.Equal(t, maxReceives, number(t, b.env(t, "ConsumerFunction")[lambdaapp.EnvMaxReceives]),
		"the consumer dead-letters (with the reason) at the queue's own limit")
	require.Greater(t, number(t, dlq["MessageRetentionPeriod"]), number(t, work["MessageRetentionPeriod"]),
		"a dead letter keeps its first enqueue time: the DLQ must keep messages longer")

	// The SQS event source.
	events := at(t, b.resource(t, "ConsumerFunction"), "Properties", "Events").(map[string]any)
	var sources []any
	for _, e := range events {
		if at(t, e, "Type") == "SQS" {
			sources = append(sources, at(t, e, "Properties"))
		}
	}
	require.Len(t, sources, 1)
	src := sources[0]
	require.Equal(t, getAtt("WorkQueue", "Arn"), at(t, src, "Queue"))
	require.Contains(t, at(t, src, "FunctionResponseTypes"), "ReportBatchItemFailures")
	batch := number(t, at(t, src, "BatchSize"))
	require.True(t, batch >= 1 && batch <= 10, "BatchSize %d: 1..10 without a batching window", batch)
	conc := number(t, at(t, src, "ScalingConfig", "MaximumConcurrency"))
	require.True(t, conc >= 2 && conc <= 1000, "MaximumConcurrency %d: 2..1000", conc)

	// Visibility: at least 6x the consumer's timeout plus the batching window.
	window := int64(0)
	if w, ok := lookup(src, "MaximumBatchingWindowInSeconds"); ok {
		window = number(t, w)
	}
	timeout := number(t, b.fnProp(t, "ConsumerFunction", "Timeout"))
	require.GreaterOrEqual(t, number(t, work["VisibilityTimeout"]), 6*timeout+window)
}

// tableRecorder answers CreateTable's calls as a server would and records
// what the DynamoDB adapter asks for.
type tableRecorder struct {
	create *dynamodb.CreateTableInput
	ttl    *dynamodb.UpdateTimeToLiveInput
}

func (r *tableRecorder) CreateTable(_ context.Context, in *dynamodb.CreateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	r.create = in
	return &dynamodb.CreateTableOutput{}, nil
}

func (r *tableRecorder) DescribeTable(_ context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{
		TableName:            in.TableName,
		TableStatus:          types.TableStatusActive,
		KeySchema:            r.create.KeySchema,
		AttributeDefinitions: r.create.AttributeDefinitions,
	}}, nil
}

func (r *tableRecorder) UpdateTimeToLive(_ context.Context, in *dynamodb.UpdateTimeToLiveInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	r.ttl = in
	return &dynamodb.UpdateTimeToLiveOutput{}, nil
}

func TestTable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	props := at(t, b.resource(t, "Table"), "Properties")
	require.Equal(t, "PAY_PER_REQUEST", at(t, props, "BillingMode"))
	require.Equal(t, true, at(t, props, "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled"))
	require.Equal(t, true, at(t, props, "SSESpecification", "SSEEnabled"))
	require.Equal(t, true, at(t, props, "TimeToLiveSpecification", "Enabled"))

	// The key schema and TTL attribute are the ones the adapter creates.
	var rec tableRecorder
	require.NoError(t, awsdynamodb.CreateTable(context.Background(), &rec, "t"))
	require.NotNil(t, rec.create)
	var wantKeys, wantAttrs []any
	for _, k := range rec.create.KeySchema {
		wantKeys = append(wantKeys, map[string]any{"AttributeName": aws.ToString(k.AttributeName), "KeyType": string(k.KeyType)})
	}
	for _, a := range rec.create.AttributeDefinitions {
		wantAttrs = append(wantAttrs, map[string]any{"AttributeName": aws.ToString(a.AttributeName), "AttributeType": string(a.AttributeType)})
	}
	require.ElementsMatch(t, wantKeys, at(t, props, "KeySchema"))
	require.ElementsMatch(t, wantAttrs, at(t, props, "AttributeDefinitions"))
	require.Equal(t, string(rec.create.BillingMode), at(t, props, "BillingMode"))
	require.NotNil(t, rec.ttl)
	require.Equal(t, aws.ToString(rec.ttl.TimeToLiveSpecification.AttributeName), at(t, props, "TimeToLiveSpecification", "AttributeName"))
}

// statement is one IAM policy statement of a function's role.
type statement struct {
	actions   []string
	resources []any
	// conditioned: the statement has a Condition; leadingKeys are the
	// patterns of its ForAllValues:StringLike dynamodb:LeadingKeys
	// condition when that is its only one (nil otherwise).
	conditioned bool
	leadingKeys []string
}

func (b bundle) statements(t *testing.T, fn string) []statement {
	t.Helper()
	r := b.resource(t, fn)
	_, hasPolicies := lookup(r, "Properties", "Policies")
	require.False(t, hasPolicies, "%s: permissions belong in its role", fn)
	role := at(t, r, "Properties", "Role")
	m, ok := role.(map[string]any)
	require.True(t, ok, "%s: Role is not !GetAtt", fn)
	att, ok := m["Fn::GetAtt"].([]any)
	require.True(t, ok && len(att) == 2 && att[1] == "Arn", "%s: Role is not !GetAtt X.Arn", fn)
	roleRes := b.resource(t, att[0].(string))
	require.Equal(t, "AWS::IAM::Role", roleRes["Type"])
	_, managed := lookup(roleRes, "Properties", "ManagedPolicyArns")
	require.False(t, managed, "%s: managed policies grant on every resource", fn)

	var out []statement
	for _, p := range at(t, roleRes, "Properties", "Policies").([]any) {
		sts := list(at(t, p, "PolicyDocument", "Statement"))
		for _, s := range sts {
			require.Equal(t, "Allow", at(t, s, "Effect"))
		}
		out = append(out, parseStatements(t, sts)...)
	}
	return out
}

// parseStatements reads the Allow statements of a policy document's
// Statement (a list, or one statement).
func parseStatements(t *testing.T, v any) []statement {
	t.Helper()
	var out []statement
	for _, s := range list(v) {
		if at(t, s, "Effect") != "Allow" {
			continue
		}
		for _, not := range []string{"NotAction", "NotResource", "NotPrincipal"} {
			_, has := lookup(s, not)
			require.False(t, has, "an Allow statement with %s grants more than it names", not)
		}
		var st statement
		for _, a := range list(at(t, s, "Action")) {
			st.actions = append(st.actions, a.(string))
		}
		st.resources = list(at(t, s, "Resource"))
		if c, ok := lookup(s, "Condition"); ok {
			st.conditioned = true
			st.leadingKeys = leadingKeys(c)
		}
		out = append(out, st)
	}
	return out
}

// leadingKeys returns the patterns of a statement's condition when it is
// a ForAllValues:StringLike condition on dynamodb:LeadingKeys alone, else nil.
func leadingKeys(cond any) []string {
	m, _ := cond.(map[string]any)
	op, _ := m["ForAllValues:StringLike"].(map[string]any)
	if len(m) != 1 || len(op) != 1 {
		return nil
	}
	var out []string
	switch v := op["dynamodb:LeadingKeys"].(type) {
	case string:
		out = append(out, v)
	case []any:
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil
			}
			out = append(out, s)
		}
	}
	return out
}

// stringLike matches s against an IAM StringLike pattern: * is any run
// of characters, ? any one character.
func stringLike(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if stringLike(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && stringLike(pattern[1:], s[1:])
	}
	return s != "" && s[0] == pattern[0] && stringLike(pattern[1:], s[1:])
}

// X-Ray's actions have no resource-level permissions: they are granted on
// "*", and they alone.
var tracingActions = []string{"xray:PutTelemetryRecords", "xray:PutTraceSegments"}

func TestIAM(t *testing.T) {
	t.Parallel()
	b := setup(t)

	// The DynamoDB actions are the adapter's API: the methods it calls.
	var dynamoActions []string
	api := reflect.TypeFor[awsdynamodb.API]()
	for i := range api.NumMethod() {
		dynamoActions = append(dynamoActions, "dynamodb:"+api.Method(i).Name)
	}
	logs := []string{"logs:CreateLogStream", "logs:PutLogEvents"}
	poll := []string{"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"}

	// want: action → the resources it may apply to.
	want := map[string]map[string][]any{
		// Fan-out, and the triggers that failed after Lambda's retries
		// (the OnFailure destination, sent with the function's role).
		"CoordinatorFunction": {"sqs:SendMessage": {getAtt("WorkQueue", "Arn"), getAtt("CoordinatorFailureQueue", "Arn")}},
		"ConsumerFunction":    {"sqs:SendMessage": {getAtt("WorkQueue", "Arn"), getAtt("DeadLetterQueue", "Arn")}},
	}
	for fn, logGroup := range map[string]string{"CoordinatorFunction": "CoordinatorLogGroup", "ConsumerFunction": "ConsumerLogGroup"} {
		for _, a := range dynamoActions {
			want[fn][a] = []any{getAtt("Table", "Arn")}
		}
		for _, a := range logs {
			want[fn][a] = []any{getAtt(logGroup, "Arn")}
		}
		for _, a := range tracingActions {
			want[fn][a] = []any{"*"}
		}
		require.Equal(t, ref(logGroup), at(t, b.resource(t, fn), "Properties", "LoggingConfig", "LogGroup"))
	}
	for _, a := range poll {
		want["ConsumerFunction"][a] = []any{getAtt("WorkQueue", "Arn")}
	}

	for fn, wantActions := range want {
		t.Run(fn, func(t *testing.T) {
			t.Parallel()
			got := map[string][]any{}
			for _, st := range b.statements(t, fn) {
				for _, r := range st.resources {
					s, isString := r.(string)
					if s == "*" && len(st.actions) > 0 && !slices.ContainsFunc(st.actions, func(a string) bool { return !slices.Contains(tracingActions, a) }) {
						continue
					}
					require.False(t, isString && strings.Contains(s, "*"), "%s: wildcard resource %q", fn, s)
					require.False(t, isString, "%s: resource %q is not a reference to this stack's resources", fn, s)
				}
				for _, a := range st.actions {
					require.NotContains(t, a, "*", "%s: wildcard action %q", fn, a)
					got[a] = append(got[a], st.resources...)
				}
			}
			require.ElementsMatch(t, slices.Collect(maps.Keys(wantActions)), slices.Collect(maps.Keys(got)), "%s: actions", fn)
			for a, res := range wantActions {
				require.ElementsMatch(t, res, got[a], "%s: resources of %s", fn, a)
			}
		})
	}
}

func TestAlarms(t *testing.T) {
	t.Parallel()
	b := setup(t)
	type alarm struct {
		namespace, metric string
		dimension         string
		value             any
	}
	var got []alarm
	for name, r := range at(t, b.tpl, "Resources").(map[string]any) {
		if at(t, r, "Type") != "AWS::CloudWatch::Alarm" {
			continue
		}
		p := at(t, r, "Properties")
		if isBatonNamespace(b.tpl, at(t, p, "Namespace")) {
			continue // per job: checkAlarms
		}
		dims := at(t, p, "Dimensions").([]any)
		require.Len(t, dims, 1, name)
		got = append(got, alarm{
			namespace: at(t, p, "Namespace").(string), metric: at(t, p, "MetricName").(string),
			dimension: at(t, dims[0], "Name").(string), value: at(t, dims[0], "Value"),
		})
		_, hasThreshold := lookup(p, "Threshold")
		require.True(t, hasThreshold, name)
	}
	for _, w := range []alarm{
		{"AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", getAtt("DeadLetterQueue", "QueueName")},
		{"AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", getAtt("WorkQueue", "QueueName")},
		{"AWS/Lambda", "Errors", "FunctionName", ref("CoordinatorFunction")},
		{"AWS/Lambda", "Errors", "FunctionName", ref("ConsumerFunction")},
	} {
		require.Contains(t, got, w)
	}
}

// TestSamConfig checks that sam builds in the source tree (CodeUri is the
// repository root: a copy would drag node_modules along).
func TestSamConfig(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg, err := os.ReadFile(filepath.Join(b.root, "samconfig.toml"))
	require.NoError(t, err)
	require.Contains(t, string(cfg), "build_in_source = true")
	require.Contains(t, string(cfg), `capabilities = "CAPABILITY_IAM"`)
}
