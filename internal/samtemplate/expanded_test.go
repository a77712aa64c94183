package samtemplate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/awssqs"
	"github.com/batonhq/baton/internal/lambdaapp"
	"github.com/batonhq/baton/internal/samtemplate"
	"github.com/batonhq/baton/internal/schedule"
)

// The template is also checked by the tools that deploy it: cfn-lint (its
// informational checks included) on template.yaml, and the AWS SAM
// translator, whose output, the CloudFormation template a deploy creates,
// the tests below check for the stack's invariants. Both are Python
// tools (pip install cfn-lint brings aws-sam-translator along). Without
// them the tests skip, saying so; under CI=true they fail instead.

// missingTool skips t, or fails it under CI.
func missingTool(t *testing.T, reason string) {
	t.Helper()
	const hint = "pip install cfn-lint (it brings aws-sam-translator)"
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: the template checks must run; %s)", reason, hint)
	}
	t.Skipf("%s; %s", reason, hint)
}

// findTool returns the path of an executable: on PATH, else as pyenv
// resolves it (pip installs under pyenv may be off PATH).
func findTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if pyenv, err := exec.LookPath("pyenv"); err == nil {
		if out, err := exec.Command(pyenv, "which", name).Output(); err == nil {
			return strings.TrimSpace(string(out)), nil
		}
	}
	return "", fmt.Errorf("%s is not on PATH, nor known to pyenv", name)
}

// findTranslatorPython returns a Python interpreter that imports
// samtranslator: the one cfn-lint runs on first.
func findTranslatorPython() (string, error) {
	var candidates []string
	if lint, err := findTool("cfn-lint"); err == nil {
		if real, err := filepath.EvalSymlinks(lint); err == nil {
			candidates = append(candidates, filepath.Join(filepath.Dir(real), "python3"), filepath.Join(filepath.Dir(real), "python"))
		}
	}
	for _, name := range []string{"python3", "python"} {
		if p, err := findTool(name); err == nil {
			candidates = append(candidates, p)
		}
	}
	for _, py := range candidates {
		if exec.Command(py, "-c", "import samtranslator").Run() == nil {
			return py, nil
		}
	}
	return "", fmt.Errorf("no Python interpreter that imports samtranslator (tried %v)", candidates)
}

func TestCfnLint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	lint, err := findTool("cfn-lint")
	if err != nil {
		missingTool(t, err.Error())
	}
	var out bytes.Buffer
	cmd := exec.Command(lint, "--include-checks", "I", "--", filepath.Join(b.root, "template.yaml"))
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	require.NoError(t, err, "cfn-lint --include-checks I template.yaml:\n%s", out.String())
	require.Empty(t, strings.TrimSpace(out.String()), "cfn-lint reported findings")
}

var expansion struct {
	once sync.Once
	tpl  map[string]any
	err  error
	skip string // why it could not run
}

// expanded returns template.yaml as the SAM translator expands it (one
// run per test binary), numbers as json.Number.
func expanded(t *testing.T) map[string]any {
	t.Helper()
	b := setup(t)
	expansion.once.Do(func() {
		py, err := findTranslatorPython()
		if err != nil {
			expansion.skip = err.Error()
			return
		}
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(py, filepath.Join("testdata", "expand.py"), filepath.Join(b.root, "template.yaml"))
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			expansion.err = fmt.Errorf("the SAM translator refused template.yaml: %w\n%s", err, stderr.String())
			return
		}
		dec := json.NewDecoder(&stdout)
		dec.UseNumber()
		expansion.err = dec.Decode(&expansion.tpl)
	})
	if expansion.skip != "" {
		missingTool(t, expansion.skip)
	}
	require.NoError(t, expansion.err)
	return expansion.tpl
}

// ---- reading a CloudFormation template --------------------------------------

// strs is v (a string, or a list of them) as strings.
func strs(t *testing.T, v any) []string {
	t.Helper()
	var out []string
	for _, x := range list(v) {
		s, ok := x.(string)
		require.True(t, ok, "%v is not a string", x)
		out = append(out, s)
	}
	return out
}

// queueOfArn returns the queue whose ARN v is (!GetAtt Q.Arn).
func queueOfArn(t *testing.T, tpl map[string]any, v any, what string) string {
	t.Helper()
	id, attr, ok := refTo(v)
	require.True(t, ok && attr == "Arn", "%s: %v is not !GetAtt <queue>.Arn", what, v)
	require.Contains(t, resourcesOf(t, tpl, "AWS::SQS::Queue"), id, "%s: %s is not a queue of the stack", what, id)
	return id
}

func float(t *testing.T, v any) float64 {
	t.Helper()
	var s string
	switch n := v.(type) {
	case json.Number:
		s = n.String()
	case string:
		s = n
	case int64:
		return float64(n)
	case float64:
		return n
	default:
		t.Fatalf("%v (%T) is not a number", v, v)
	}
	f, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return f
}

// ---- intrinsic functions, for names and ARNs ---------------------------------

// stackIdentity is what CloudFormation's pseudo parameters say about one
// stack.
type stackIdentity struct {
	id, name, region, account string
}

var (
	devStack  = stackIdentity{"arn:aws:cloudformation:eu-west-1:123456789012:stack/baton-dev/1c2fa620-982a-11e3-aff7-50e2416294e0", "baton-dev", "eu-west-1", "123456789012"}
	prodStack = stackIdentity{"arn:aws:cloudformation:eu-west-1:123456789012:stack/baton-prod/6e3b1c40-0f4d-11ef-9a8e-0a1b2c3d4e5f", "baton-prod", "eu-west-1", "123456789012"}
)

func (s stackIdentity) pseudo(name string) (string, bool) {
	switch name {
	case "AWS::StackId":
		return s.id, true
	case "AWS::StackName":
		return s.name, true
	case "AWS::Region":
		return s.region, true
	case "AWS::AccountId":
		return s.account, true
	case "AWS::Partition":
		return "aws", true
	case "AWS::URLSuffix":
		return "amazonaws.com", true
	}
	return "", false
}

// queueARN is the ARN of the queue named name in s.
func (s stackIdentity) queueARN(name string) string {
	return fmt.Sprintf("arn:aws:sqs:%s:%s:%s", s.region, s.account, name)
}

var subVariable = regexp.MustCompile(`\$\{([^}]*)\}`)

// eval evaluates a string-valued expression made of literals, pseudo
// parameters, Fn::Sub, Fn::Join, Fn::Select and Fn::Split, as
// CloudFormation would for stack s. Anything else (a resource's
// attribute, a parameter) is an error.
func eval(v any, s stackIdentity) (any, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := eval(e, s)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case map[string]any:
		if len(x) != 1 {
			return nil, fmt.Errorf("%v is not an intrinsic function", x)
		}
		for fn, arg := range x {
			return evalFn(fn, arg, s)
		}
	}
	return nil, fmt.Errorf("%v (%T) is not a string expression", v, v)
}

func evalFn(fn string, arg any, s stackIdentity) (any, error) {
	args, _ := arg.([]any)
	switch fn {
	case "Ref":
		name, _ := arg.(string)
		if v, ok := s.pseudo(name); ok {
			return v, nil
		}
		return nil, fmt.Errorf("Ref %v: not a pseudo parameter", arg)
	case "Fn::Sub":
		format, vars := arg, map[string]any{}
		if len(args) == 2 { // [format, {variable: value}]
			format = args[0]
			vars, _ = args[1].(map[string]any)
		}
		f, ok := format.(string)
		if !ok {
			return nil, fmt.Errorf("Fn::Sub %v: no format string", arg)
		}
		var errs []error
		out := subVariable.ReplaceAllStringFunc(f, func(m string) string {
			name := m[2 : len(m)-1]
			if literal, ok := strings.CutPrefix(name, "!"); ok {
				return "${" + literal + "}"
			}
			if x, ok := vars[name]; ok {
				v, err := evalString(x, s)
				errs = append(errs, err)
				return v
			}
			if p, ok := s.pseudo(name); ok {
				return p
			}
			errs = append(errs, fmt.Errorf("Fn::Sub: ${%s} is not a pseudo parameter nor a variable", name))
			return ""
		})
		return out, errors.Join(errs...)
	case "Fn::Join":
		if len(args) != 2 {
			return nil, fmt.Errorf("Fn::Join %v: want [delimiter, list]", arg)
		}
		parts, err := eval(args[1], s)
		if err != nil {
			return nil, err
		}
		var ss []string
		for _, p := range list(parts) {
			str, ok := p.(string)
			if !ok {
				return nil, fmt.Errorf("Fn::Join: %v is not a string", p)
			}
			ss = append(ss, str)
		}
		return strings.Join(ss, args[0].(string)), nil
	case "Fn::Split":
		if len(args) != 2 {
			return nil, fmt.Errorf("Fn::Split %v: want [delimiter, string]", arg)
		}
		str, err := evalString(args[1], s)
		if err != nil {
			return nil, err
		}
		var out []any
		for _, p := range strings.Split(str, args[0].(string)) {
			out = append(out, p)
		}
		return out, nil
	case "Fn::Select":
		if len(args) != 2 {
			return nil, fmt.Errorf("Fn::Select %v: want [index, list]", arg)
		}
		i, err := strconv.Atoi(fmt.Sprint(args[0]))
		if err != nil {
			return nil, fmt.Errorf("Fn::Select: index %v: %w", args[0], err)
		}
		l, err := eval(args[1], s)
		if err != nil {
			return nil, err
		}
		items := list(l)
		if i < 0 || i >= len(items) {
			return nil, fmt.Errorf("Fn::Select: index %d out of %d", i, len(items))
		}
		return items[i], nil
	}
	return nil, fmt.Errorf("%s: not evaluated by this check", fn)
}

func evalString(v any, s stackIdentity) (string, error) {
	r, err := eval(v, s)
	if err != nil {
		return "", err
	}
	str, ok := r.(string)
	if !ok {
		return "", fmt.Errorf("%v is not a string", r)
	}
	return str, nil
}

func TestEval(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Decode([]byte(`
a: !Sub ["baton-${Id}", {Id: !Select [2, !Split ["/", !Ref AWS::StackId]]}]
b: !Sub "arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:${AWS::StackName}-x-${!Literal}"
c: !Join ["-", [a, !Ref AWS::StackName]]
d: !GetAtt Queue.Arn
`))
	require.NoError(t, err)
	for key, want := range map[string]string{
		"a": "baton-1c2fa620-982a-11e3-aff7-50e2416294e0",
		"b": "arn:aws:sqs:eu-west-1:123456789012:baton-dev-x-${Literal}",
		"c": "a-baton-dev",
	} {
		got, err := evalString(tpl[key], devStack)
		require.NoError(t, err, key)
		require.Equal(t, want, got, key)
	}
	_, err = evalString(tpl["d"], devStack)
	require.Error(t, err)
}

// ---- the expanded template's invariants -------------------------------------

// nameProperties are the properties that name a resource of each type the
// stack holds within the account and region ("": none).
var nameProperties = map[string]string{
	"AWS::CloudWatch::Alarm":          "AlarmName",
	"AWS::DynamoDB::Table":            "TableName",
	"AWS::IAM::ManagedPolicy":         "ManagedPolicyName",
	"AWS::IAM::Role":                  "RoleName",
	"AWS::Lambda::EventInvokeConfig":  "",
	"AWS::Lambda::EventSourceMapping": "",
	"AWS::Lambda::Function":           "FunctionName",
	"AWS::Lambda::Permission":         "",
	"AWS::Logs::LogGroup":             "LogGroupName",
	"AWS::SNS::Topic":                 "TopicName",
	"AWS::SQS::Queue":                 "QueueName",
	"AWS::SQS::QueuePolicy":           "",
	"AWS::Scheduler::Schedule":        "Name",
}

// Two stacks of the template share an account and region: no resource
// has a fixed name. A name, when there is one, is made from the stack's
// identity, so that two stacks' names differ.
func checkNoFixedNames(t *testing.T, tpl map[string]any) {
	for id, r := range at(t, tpl, "Resources").(map[string]any) {
		typ := at(t, r, "Type").(string)
		prop, known := nameProperties[typ]
		require.True(t, known, "%s: resource type %s: add it to nameProperties (its name property, or \"\")", id, typ)
		if prop == "" {
			continue
		}
		v, named := lookup(r, "Properties", prop)
		if !named {
			continue
		}
		require.NotEqual(t, "AWS::Scheduler::Schedule", typ, "%s: a schedule has no fixed name (OmitName: true)", id)
		dev, err := evalString(v, devStack)
		require.NoError(t, err, "%s: %s", id, prop)
		prod, err := evalString(v, prodStack)
		require.NoError(t, err, "%s: %s", id, prop)
		require.NotEqual(t, dev, prod, "%s: %s %q is the same in two stacks", id, prop, dev)
	}
}

// checkScheduleParameters: the deployed schedule takes its expression,
// time zone and state from the template's parameters, so that a deploy
// can pause the schedule or move it without editing the template.
func checkScheduleParameters(t *testing.T, tpl map[string]any) {
	schedules := resourcesOf(t, tpl, "AWS::Scheduler::Schedule")
	require.Len(t, schedules, 1)
	for id, s := range schedules {
		for prop, param := range map[string]string{
			"ScheduleExpression": "FxScheduleExpression", "ScheduleExpressionTimezone": "FxScheduleTimezone", "State": "FxScheduleState",
		} {
			ref, _, ok := refTo(at(t, s, "Properties", prop))
			require.True(t, ok, "%s: %s is a !Ref", id, prop)
			require.Equal(t, param, ref, "%s: %s", id, prop)
		}
	}
	require.Equal(t, []any{"ENABLED", "DISABLED"}, at(t, tpl, "Parameters", "FxScheduleState", "AllowedValues"))
}

// deadLetterSinks are the queues failed work lands in: redrive targets,
// schedules' dead-letter queues and asynchronous invocations' failure
// destinations.
func deadLetterSinks(t *testing.T, tpl map[string]any) map[string]string {
	t.Helper()
	sinks := map[string]string{} // queue → what lands there
	for id, q := range resourcesOf(t, tpl, "AWS::SQS::Queue") {
		if target, ok := lookup(q, "Properties", "RedrivePolicy", "deadLetterTargetArn"); ok {
			sinks[queueOfArn(t, tpl, target, id+" RedrivePolicy")] = "dead letters of " + id
		}
	}
	for id, s := range resourcesOf(t, tpl, "AWS::Scheduler::Schedule") {
		target := at(t, s, "Properties", "Target")
		dlq := queueOfArn(t, tpl, at(t, target, "DeadLetterConfig", "Arn"), id+" DeadLetterConfig")
		sinks[dlq] = "ticks " + id + " could not deliver"
	}
	for id, c := range resourcesOf(t, tpl, "AWS::Lambda::EventInvokeConfig") {
		if d, ok := lookup(c, "Properties", "DestinationConfig", "OnFailure", "Destination"); ok {
			sinks[queueOfArn(t, tpl, d, id+" OnFailure")] = "invocations failed by " + id
		}
	}
	return sinks
}

// grants reports whether the statements allow action on resource (an
// expression of the template), disregarding conditions.
func grants(sts []statement, action string, resource any) bool {
	return slices.ContainsFunc(sts, func(st statement) bool {
		return slices.Contains(st.actions, action) && (slices.ContainsFunc(st.resources, func(r any) bool {
			return r == "*" || fmt.Sprint(r) == fmt.Sprint(resource)
		}))
	})
}

// roleOf returns the role a function or schedule target assumes
// (!GetAtt Role.Arn).
func roleOf(t *testing.T, tpl map[string]any, v any, what string) string {
	t.Helper()
	id, attr, ok := refTo(v)
	require.True(t, ok && attr == "Arn", "%s: role %v is not !GetAtt <role>.Arn", what, v)
	require.Contains(t, resourcesOf(t, tpl, "AWS::IAM::Role"), id, what)
	return id
}

func checkFailedTicksKept(t *testing.T, tpl map[string]any) {
	policies := policyStatements(t, tpl)
	schedules := resourcesOf(t, tpl, "AWS::Scheduler::Schedule")
	require.NotEmpty(t, schedules)
	for id, s := range schedules {
		target := at(t, s, "Properties", "Target")
		_, hasRetries := lookup(target, "RetryPolicy")
		require.True(t, hasRetries, "%s: no RetryPolicy", id)
		dlq := queueOfArn(t, tpl, at(t, target, "DeadLetterConfig", "Arn"), id+" DeadLetterConfig")
		role := roleOf(t, tpl, at(t, target, "RoleArn"), id)
		require.True(t, grants(policies[role], "sqs:SendMessage", getAtt(dlq, "Arn")),
			"%s: its role %s cannot send to its dead-letter queue %s", id, role, dlq)
	}

	// The coordinator's asynchronous invocations that fail after their
	// retries go to a queue, sent with the function's role.
	var coordinatorConfigs int
	for id, c := range resourcesOf(t, tpl, "AWS::Lambda::EventInvokeConfig") {
		if fmt.Sprint(at(t, c, "Properties", "FunctionName")) != fmt.Sprint(ref("CoordinatorFunction")) {
			continue
		}
		coordinatorConfigs++
		require.Positive(t, number(t, at(t, c, "Properties", "MaximumRetryAttempts")), id)
		q := queueOfArn(t, tpl, at(t, c, "Properties", "DestinationConfig", "OnFailure", "Destination"), id+" OnFailure")
		role := roleOf(t, tpl, at(t, tpl, "Resources", "CoordinatorFunction", "Properties", "Role"), "CoordinatorFunction")
		require.True(t, grants(policies[role], "sqs:SendMessage", getAtt(q, "Arn")),
			"the coordinator's role %s cannot send to its failure destination %s", role, q)
	}
	require.Equal(t, 1, coordinatorConfigs, "the coordinator's EventInvokeConfig")

	// Every queue failed work lands in is kept (with the stack, and 14
	// days), and an alarm goes off on its first message.
	alarms := resourcesOf(t, tpl, "AWS::CloudWatch::Alarm")
	for q, what := range deadLetterSinks(t, tpl) {
		res := at(t, tpl, "Resources", q)
		require.Equal(t, "Retain", at(t, res, "DeletionPolicy"), "%s (%s)", q, what)
		require.Equal(t, "Retain", at(t, res, "UpdateReplacePolicy"), "%s (%s)", q, what)
		require.Equal(t, int64(14*24*3600), number(t, at(t, res, "Properties", "MessageRetentionPeriod")), "%s (%s): SQS's longest retention", q, what)
		var watching []string
		for id, a := range alarms {
			p := at(t, a, "Properties")
			dims, _ := lookup(p, "Dimensions")
			if at(t, p, "Namespace") == "AWS/SQS" && at(t, p, "MetricName") == "ApproximateNumberOfMessagesVisible" &&
				fmt.Sprint(dims) == fmt.Sprint([]any{map[string]any{"Name": "QueueName", "Value": getAtt(q, "QueueName")}}) &&
				at(t, p, "ComparisonOperator") == "GreaterThanThreshold" && float(t, at(t, p, "Threshold")) == 0 {
				watching = append(watching, id)
			}
		}
		require.NotEmpty(t, watching, "%s (%s): no alarm on its depth going off at one message", q, what)
	}
}

func checkQueues(t *testing.T, tpl map[string]any) {
	queues := resourcesOf(t, tpl, "AWS::SQS::Queue")
	sources := map[string][]string{} // redrive target → the queues that name it
	for id, q := range queues {
		require.Equal(t, true, at(t, q, "Properties", "SqsManagedSseEnabled"), "%s: encryption at rest", id)
		if target, ok := lookup(q, "Properties", "RedrivePolicy", "deadLetterTargetArn"); ok {
			dlq := queueOfArn(t, tpl, target, id)
			sources[dlq] = append(sources[dlq], id)
		}
	}

	// TLS only: every queue has one queue policy, which denies requests
	// not made over TLS.
	policyOf := map[string][]string{}
	for pid, p := range resourcesOf(t, tpl, "AWS::SQS::QueuePolicy") {
		var denied []string
		for _, st := range list(at(t, p, "Properties", "PolicyDocument", "Statement")) {
			if at(t, st, "Effect") != "Deny" {
				continue
			}
			principal := fmt.Sprint(at(t, st, "Principal"))
			cond, _ := lookup(st, "Condition", "Bool", "aws:SecureTransport")
			if (principal == "*" || principal == "map[AWS:*]") && slices.Contains(strs(t, at(t, st, "Action")), "sqs:*") &&
				(cond == "false" || cond == false) {
				for _, r := range list(at(t, st, "Resource")) {
					denied = append(denied, fmt.Sprint(r))
				}
			}
		}
		for _, q := range list(at(t, p, "Properties", "Queues")) {
			id, attr, ok := refTo(q)
			require.True(t, ok && attr == "", "%s: queue %v is not a !Ref of the stack's", pid, q)
			policyOf[id] = append(policyOf[id], pid)
			require.True(t, slices.Contains(denied, fmt.Sprint(getAtt(id, "Arn"))) || slices.Contains(denied, "*"),
				"%s: does not deny %s requests without TLS (Deny, Principal *, Action sqs:*, Condition Bool aws:SecureTransport false)", pid, id)
		}
	}
	for id := range queues {
		require.Len(t, policyOf[id], 1, "%s: queue policies (a queue has one; it must deny requests without TLS)", id)
	}

	// Redrive: a dead-letter queue takes messages from its source queues
	// only; other queues from none.
	for id, q := range queues {
		allow := at(t, q, "Properties", "RedriveAllowPolicy")
		srcs, isTarget := sources[id]
		if !isTarget {
			require.Equal(t, "denyAll", at(t, allow, "redrivePermission"), "%s: no queue redrives to it", id)
			continue
		}
		require.Equal(t, "byQueue", at(t, allow, "redrivePermission"), id)
		for _, stack := range []stackIdentity{devStack, prodStack} {
			var want, got []string
			for _, src := range srcs {
				name, err := evalString(at(t, queues[src], "Properties", "QueueName"), stack)
				require.NoError(t, err, "%s: its name, which %s's RedriveAllowPolicy names", src, id)
				want = append(want, stack.queueARN(name))
			}
			for _, a := range list(at(t, allow, "sourceQueueArns")) {
				arn, err := evalString(a, stack)
				require.NoError(t, err, "%s: sourceQueueArns", id)
				got = append(got, arn)
			}
			require.ElementsMatch(t, want, got, "%s: RedriveAllowPolicy sourceQueueArns (in stack %s)", id, stack.name)
		}
	}

	// The work queue's dead-letter queue is named as `baton setup` names
	// it, so that setup finds the stack's queues.
	target, _, _ := refTo(at(t, queues["WorkQueue"], "Properties", "RedrivePolicy", "deadLetterTargetArn"))
	work, err := evalString(at(t, queues["WorkQueue"], "Properties", "QueueName"), devStack)
	require.NoError(t, err)
	dlq, err := evalString(at(t, queues[target], "Properties", "QueueName"), devStack)
	require.NoError(t, err)
	require.Equal(t, work+awssqs.DLQSuffix, dlq)
}

func checkTable(t *testing.T, tpl map[string]any) {
	tables := resourcesOf(t, tpl, "AWS::DynamoDB::Table")
	require.Len(t, tables, 1)
	for id, r := range tables {
		require.Equal(t, true, at(t, r, "Properties", "DeletionProtectionEnabled"), id)
		require.Equal(t, "Retain", at(t, r, "DeletionPolicy"), id)
		require.Equal(t, "Retain", at(t, r, "UpdateReplacePolicy"), id)
	}
}

// Lambda's application log levels, lowest first.
var lambdaLevels = []string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"}

func checkFunctions(t *testing.T, tpl map[string]any) {
	policies := policyStatements(t, tpl)
	fns := resourcesOf(t, tpl, "AWS::Lambda::Function")
	require.Len(t, fns, len(functions))
	for fn, r := range fns {
		p := at(t, r, "Properties")
		require.Equal(t, "Active", at(t, p, "TracingConfig", "Mode"), "%s: X-Ray tracing", fn)
		role := roleOf(t, tpl, at(t, p, "Role"), fn)
		for _, a := range tracingActions {
			require.True(t, grants(policies[role], a, "*"), "%s: its role %s cannot send traces (%s)", fn, role, a)
		}

		// The ADOT collector layer only when the parameter names one.
		layers, ok := at(t, p, "Layers").(map[string]any)
		require.True(t, ok, "%s: Layers is not a !If on the collector parameter", fn)
		cond := list(layers["Fn::If"])
		require.Len(t, cond, 3, "%s: Layers", fn)
		require.Equal(t, "HasOTelCollector", cond[0], fn)
		layerParam, _, isLayerRef := refTo(list(cond[1])[0])
		require.True(t, isLayerRef, "%s: the layer is not a !Ref of a parameter", fn)
		require.Equal(t, "", at(t, tpl, "Parameters", layerParam, "Default"), "%s: no layer unless asked for", fn)
		noValue, _, _ := refTo(cond[2])
		require.Equal(t, "AWS::NoValue", noValue, fn)
		require.Equal(t, map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{map[string]any{"Ref": layerParam}, ""}}}},
			at(t, tpl, "Conditions", "HasOTelCollector"), "%s: the layer's condition", fn)

		logging := at(t, p, "LoggingConfig")
		require.Equal(t, "JSON", at(t, logging, "LogFormat"), fn)
		group, _, _ := refTo(at(t, logging, "LogGroup"))
		require.Contains(t, resourcesOf(t, tpl, "AWS::Logs::LogGroup"), group, "%s: LogGroup", fn)

		// Lambda's filter of application logs never drops what the
		// function logs at its own level (BATON_LOG_LEVEL), nor the EMF
		// metric lines, which it reads as INFO.
		levelParam, _, isRef := refTo(at(t, p, "Environment", "Variables", lambdaapp.EnvLogLevel))
		require.True(t, isRef, "%s: %s is not a !Ref of a parameter", fn, lambdaapp.EnvLogLevel)
		allowed := strs(t, at(t, tpl, "Parameters", levelParam, "AllowedValues"))
		lambdaLevel := func(level string) string {
			switch v := at(t, logging, "ApplicationLogLevel").(type) {
			case string:
				return v
			case map[string]any:
				args, ok := v["Fn::FindInMap"].([]any)
				require.True(t, ok && len(args) == 3, "%s: ApplicationLogLevel is neither a level nor !FindInMap", fn)
				param, _, _ := refTo(args[1])
				require.Equal(t, levelParam, param, "%s: ApplicationLogLevel follows the parameter of %s", fn, lambdaapp.EnvLogLevel)
				return at(t, tpl, "Mappings", args[0].(string), level, args[2].(string)).(string)
			}
			t.Fatalf("%s: ApplicationLogLevel %v", fn, at(t, logging, "ApplicationLogLevel"))
			return ""
		}
		for _, level := range allowed {
			got := slices.Index(lambdaLevels, lambdaLevel(level))
			require.GreaterOrEqual(t, got, 0, "%s: ApplicationLogLevel for %s", fn, level)
			own := slices.Index(lambdaLevels, strings.ToUpper(level))
			require.GreaterOrEqual(t, own, 0, "%s: %s level %q", fn, lambdaapp.EnvLogLevel, level)
			require.LessOrEqual(t, got, own, "%s: with %s=%s Lambda would drop the function's own logs", fn, lambdaapp.EnvLogLevel, level)
			require.LessOrEqual(t, got, slices.Index(lambdaLevels, "INFO"), "%s: with %s=%s Lambda would drop the EMF metric lines (read as INFO)", fn, lambdaapp.EnvLogLevel, level)
		}
	}
}

// actionsOf are an alarm's notifications, or nil.
func actionsOf(t *testing.T, alarm map[string]any, key string) []any {
	t.Helper()
	v, ok := lookup(alarm, "Properties", key)
	if !ok {
		return nil
	}
	return list(v)
}

// checkNotifies checks that v names an SNS topic: a parameter, a topic of
// the stack, or an !If between those.
func checkNotifies(t *testing.T, tpl map[string]any, v any, what string) {
	t.Helper()
	if m, ok := v.(map[string]any); ok {
		if branches, isIf := m["Fn::If"].([]any); isIf && len(branches) == 3 {
			checkNotifies(t, tpl, branches[1], what)
			checkNotifies(t, tpl, branches[2], what)
			return
		}
	}
	id, attr, ok := refTo(v)
	require.True(t, ok && attr == "", "%s: %v is not a topic", what, v)
	if _, isParam := lookup(tpl, "Parameters", id); isParam {
		return
	}
	require.Contains(t, resourcesOf(t, tpl, "AWS::SNS::Topic"), id, what)
}

func checkAlarms(t *testing.T, tpl map[string]any) {
	alarms := resourcesOf(t, tpl, "AWS::CloudWatch::Alarm")
	for id, a := range alarms {
		notify := actionsOf(t, a, "AlarmActions")
		require.NotEmpty(t, notify, "%s: AlarmActions", id)
		require.Equal(t, notify, actionsOf(t, a, "OKActions"), "%s: OKActions notify whom AlarmActions notify", id)
		for _, n := range notify {
			checkNotifies(t, tpl, n, id)
		}
	}

	// Per job: ticks that stop, dead items, tick-to-done beyond the budget.
	byJob := func(job, metric string) []map[string]any {
		var out []map[string]any
		for _, a := range alarms {
			p := at(t, a, "Properties").(map[string]any)
			if isBatonNamespace(tpl, p["Namespace"]) && p["MetricName"] == metric &&
				fmt.Sprint(p["Dimensions"]) == fmt.Sprint([]any{map[string]any{"Name": "Job", "Value": job}, serviceDimension}) {
				out = append(out, p)
			}
		}
		return out
	}
	window := func(p map[string]any) time.Duration {
		return time.Duration(number(t, p["Period"])*number(t, p["EvaluationPeriods"])) * time.Second
	}
	for _, j := range fx.Catalog(nil).Jobs() {
		stopped := byJob(j.Name, "RunsOpened")
		require.Len(t, stopped, 1, "job %s: an alarm on RunsOpened (ticks that stop)", j.Name)
		p := stopped[0]
		require.Equal(t, "Sum", p["Statistic"], j.Name)
		require.Equal(t, "LessThanThreshold", p["ComparisonOperator"], j.Name)
		require.Equal(t, 1.0, float(t, p["Threshold"]), j.Name)
		require.Equal(t, "breaching", p["TreatMissingData"], "job %s: a coordinator that never runs writes no metric", j.Name)
		gap := longestGap(t, j.Schedule)
		require.GreaterOrEqual(t, window(p), 2*gap, "job %s: the alarm's window must hold two ticks at least (the longest gap between ticks is %s)", j.Name, gap)

		dead := byJob(j.Name, "ItemsDead")
		require.Len(t, dead, 1, "job %s: an alarm on ItemsDead", j.Name)
		require.Equal(t, "Sum", dead[0]["Statistic"], j.Name)
		require.Equal(t, "GreaterThanThreshold", dead[0]["ComparisonOperator"], j.Name)
		require.Equal(t, 0.0, float(t, dead[0]["Threshold"]), j.Name)

		stale := byJob(j.Name, "TickToDone")
		if j.StalenessBudget == 0 {
			require.Empty(t, stale, "job %s has no staleness budget", j.Name)
			continue
		}
		require.Len(t, stale, 1, "job %s: an alarm on TickToDone beyond its staleness budget", j.Name)
		require.Equal(t, "Maximum", stale[0]["Statistic"], j.Name)
		require.Equal(t, "GreaterThanThreshold", stale[0]["ComparisonOperator"], j.Name)
		require.Equal(t, "Milliseconds", stale[0]["Unit"], j.Name)
		require.Equal(t, float64(j.StalenessBudget.Milliseconds()), float(t, stale[0]["Threshold"]),
			"job %s: the threshold is the job's StalenessBudget (%s) in milliseconds", j.Name, j.StalenessBudget)
	}
	require.Positive(t, fx.Job(nil).StalenessBudget, "the reference job sets a staleness budget")
}

// longestGap is the longest time between consecutive ticks of expr over
// its next 1000 ticks.
func longestGap(t *testing.T, expr string) time.Duration {
	t.Helper()
	s, err := schedule.Parse(expr)
	require.NoError(t, err)
	var gap time.Duration
	prev := s.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for range 1000 {
		next := s.Next(prev)
		if next.IsZero() {
			break
		}
		gap = max(gap, next.Sub(prev))
		prev = next
	}
	require.Positive(t, gap, "%s: fewer than two ticks", expr)
	return gap
}

func checkOutputs(t *testing.T, tpl map[string]any) {
	outputs := at(t, tpl, "Outputs").(map[string]any)
	require.NotEmpty(t, outputs)
	for name, o := range outputs {
		d, _ := lookup(o, "Description")
		require.NotEmpty(t, d, "output %s: no Description", name)
	}
	for _, want := range []string{"TableName", "WorkQueueUrl", "DeadLetterQueueUrl", "AlarmTopicArn", "OperatorPolicyArn"} {
		require.Contains(t, outputs, want)
	}
	// The topic output is the one the alarms notify.
	for id, a := range resourcesOf(t, tpl, "AWS::CloudWatch::Alarm") {
		require.Equal(t, []any{at(t, outputs, "AlarmTopicArn", "Value")}, actionsOf(t, a, "AlarmActions"), id)
	}
}

// The operator's policy covers the CLI on the stack: everything either
// function does (replay, invoke and in-process consumers run their
// handlers), `baton setup` on the stack's table and queues, and redrives
// by SQS message-move tasks; on the stack's table and queues only.
func checkOperatorPolicy(t *testing.T, tpl map[string]any) {
	policies := resourcesOf(t, tpl, "AWS::IAM::ManagedPolicy")
	require.Contains(t, policies, "OperatorPolicy")
	operator := policyStatements(t, tpl)["OperatorPolicy"]
	table, work := getAtt("Table", "Arn"), getAtt("WorkQueue", "Arn")
	target, _, _ := refTo(at(t, tpl, "Resources", "WorkQueue", "Properties", "RedrivePolicy", "deadLetterTargetArn"))
	dlq := getAtt(target, "Arn")
	stackResources := []any{table, work, dlq}

	for _, st := range operator {
		for _, r := range st.resources {
			require.True(t, slices.ContainsFunc(stackResources, func(x any) bool { return fmt.Sprint(x) == fmt.Sprint(r) }),
				"OperatorPolicy: resource %v is not the stack's table or work queue or its dead-letter queue", r)
		}
		for _, a := range st.actions {
			require.True(t, strings.HasPrefix(a, "dynamodb:") || strings.HasPrefix(a, "sqs:"), "OperatorPolicy: action %s", a)
			require.NotContains(t, a, "*", "OperatorPolicy: wildcard action")
		}
	}
	want := map[string][]any{
		"dynamodb:DescribeTable":      {table}, // the CLI's start-up check
		"dynamodb:CreateTable":        {table}, // baton setup
		"dynamodb:UpdateTimeToLive":   {table},
		"sqs:GetQueueUrl":             {work, dlq},
		"sqs:GetQueueAttributes":      {work, dlq},
		"sqs:CreateQueue":             {work, dlq},
		"sqs:SetQueueAttributes":      {work, dlq},
		"sqs:StartMessageMoveTask":    {dlq}, // baton dlq redrive
		"sqs:ListMessageMoveTasks":    {dlq},
		"sqs:CancelMessageMoveTask":   {dlq},
		"sqs:ReceiveMessage":          {dlq}, // the move task's source
		"sqs:DeleteMessage":           {dlq},
		"sqs:SendMessage":             {work}, // its destination
		"sqs:ChangeMessageVisibility": {dlq},
	}
	all := policyStatements(t, tpl)
	for _, fn := range []string{"CoordinatorFunction", "ConsumerFunction"} {
		role := roleOf(t, tpl, at(t, tpl, "Resources", fn, "Properties", "Role"), fn)
		for _, st := range all[role] {
			for _, a := range st.actions {
				for _, r := range st.resources {
					if slices.ContainsFunc(stackResources, func(x any) bool { return fmt.Sprint(x) == fmt.Sprint(r) }) {
						want[a] = append(want[a], r)
					}
				}
			}
		}
	}
	for a, rs := range want {
		for _, r := range rs {
			require.True(t, grants(operator, a, r), "OperatorPolicy does not grant %s on %v", a, r)
		}
	}
}

func TestExpandedTemplate(t *testing.T) {
	t.Parallel()
	tpl := expanded(t)
	for name, check := range map[string]func(*testing.T, map[string]any){
		"no fixed names":         checkNoFixedNames,
		"failed ticks are kept":  checkFailedTicksKept,
		"schedule parameters":    checkScheduleParameters,
		"queues":                 checkQueues,
		"table":                  checkTable,
		"functions":              checkFunctions,
		"alarms":                 checkAlarms,
		"outputs":                checkOutputs,
		"operator policy":        checkOperatorPolicy,
		"grants by record kinds": func(t *testing.T, tpl map[string]any) { checkRecordGrants(t, tpl, readRecordGrants(t)) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			check(t, tpl)
		})
	}
}

// ---- the checks can fail -----------------------------------------------------

// A broken template, and the check that must refuse it.
type brokenTemplate struct {
	check  func(*testing.T, map[string]any)
	breakf func(t *testing.T, tpl map[string]any)
	want   string // in the check's failure
}

// statementBySid returns the statement Sid of resource's policies.
func statementBySid(t *testing.T, tpl map[string]any, resource, sid string) map[string]any {
	t.Helper()
	props := at(t, tpl, "Resources", resource, "Properties")
	docs := []any{}
	if d, ok := lookup(props, "PolicyDocument"); ok {
		docs = append(docs, d)
	}
	if ps, ok := lookup(props, "Policies"); ok {
		for _, p := range ps.([]any) {
			docs = append(docs, at(t, p, "PolicyDocument"))
		}
	}
	for _, d := range docs {
		for _, st := range list(at(t, d, "Statement")) {
			if m := st.(map[string]any); m["Sid"] == sid {
				return m
			}
		}
	}
	t.Fatalf("%s: no statement %s", resource, sid)
	return nil
}

func props(t *testing.T, tpl map[string]any, resource string) map[string]any {
	t.Helper()
	return at(t, tpl, "Resources", resource, "Properties").(map[string]any)
}

var brokenTemplates = map[string]brokenTemplate{
	"a named schedule": {checkNoFixedNames, func(t *testing.T, tpl map[string]any) {
		props(t, tpl, "CoordinatorFunctionTick")["Name"] = "CoordinatorFunctionTick"
	}, "OmitName"},
	"a fixed table name": {checkNoFixedNames, func(t *testing.T, tpl map[string]any) {
		props(t, tpl, "Table")["TableName"] = "baton"
	}, "is the same in two stacks"},
	"no schedule dead-letter queue": {checkFailedTicksKept, func(t *testing.T, tpl map[string]any) {
		delete(at(t, props(t, tpl, "CoordinatorFunctionTick"), "Target").(map[string]any), "DeadLetterConfig")
	}, "DeadLetterConfig is missing"},
	"no failure destination": {checkFailedTicksKept, func(t *testing.T, tpl map[string]any) {
		delete(props(t, tpl, "CoordinatorFunctionEventInvokeConfig"), "DestinationConfig")
	}, "DestinationConfig is missing"},
	"a dead-letter queue deleted with the stack": {checkFailedTicksKept, func(t *testing.T, tpl map[string]any) {
		at(t, tpl, "Resources", "DeadLetterQueue").(map[string]any)["DeletionPolicy"] = "Delete"
	}, "DeadLetterQueue"},
	"a failure queue without its alarm": {checkFailedTicksKept, func(t *testing.T, tpl map[string]any) {
		delete(at(t, tpl, "Resources").(map[string]any), "CoordinatorFailureAlarm")
	}, "no alarm on its depth"},
	"plain HTTP allowed": {checkQueues, func(t *testing.T, tpl map[string]any) {
		st := list(at(t, props(t, tpl, "QueuesTlsOnlyPolicy"), "PolicyDocument", "Statement"))[0].(map[string]any)
		st["Condition"] = map[string]any{"Bool": map[string]any{"aws:SecureTransport": "true"}}
	}, "without TLS"},
	"a dead-letter queue open to any source": {checkQueues, func(t *testing.T, tpl map[string]any) {
		props(t, tpl, "DeadLetterQueue")["RedriveAllowPolicy"] = map[string]any{"redrivePermission": "allowAll"}
	}, "byQueue"},
	"a dead-letter queue for another queue": {checkQueues, func(t *testing.T, tpl map[string]any) {
		at(t, props(t, tpl, "DeadLetterQueue"), "RedriveAllowPolicy").(map[string]any)["sourceQueueArns"] = []any{"arn:aws:sqs:eu-west-1:123456789012:other"}
	}, "sourceQueueArns"},
	"an unprotected table": {checkTable, func(t *testing.T, tpl map[string]any) {
		props(t, tpl, "Table")["DeletionProtectionEnabled"] = false
	}, "Table"},
	"no tracing": {checkFunctions, func(t *testing.T, tpl map[string]any) {
		props(t, tpl, "ConsumerFunction")["TracingConfig"] = map[string]any{"Mode": "PassThrough"}
	}, "X-Ray tracing"},
	"Lambda filtering the metrics out": {checkFunctions, func(t *testing.T, tpl map[string]any) {
		at(t, tpl, "Mappings", "LogLevels", "error").(map[string]any)["Lambda"] = "ERROR"
	}, "EMF"},
	"a staleness threshold that is not the budget": {checkAlarms, func(t *testing.T, tpl map[string]any) {
		props(t, tpl, "FxStalenessAlarm")["Threshold"] = json.Number("30000")
	}, "StalenessBudget"},
	"ticks stopping unseen": {checkAlarms, func(t *testing.T, tpl map[string]any) {
		props(t, tpl, "FxTicksStoppedAlarm")["TreatMissingData"] = "notBreaching"
	}, "never runs"},
	"an alarm that tells no recovery": {checkAlarms, func(t *testing.T, tpl map[string]any) {
		delete(props(t, tpl, "QueueAgeAlarm"), "OKActions")
	}, "OKActions"},
	"an output without description": {checkOutputs, func(t *testing.T, tpl map[string]any) {
		delete(at(t, tpl, "Outputs", "TableName").(map[string]any), "Description")
	}, "no Description"},
	"operators who cannot cancel a redrive": {checkOperatorPolicy, func(t *testing.T, tpl map[string]any) {
		statementBySid(t, tpl, "OperatorPolicy", "Redrive")["Action"] = []any{"sqs:StartMessageMoveTask", "sqs:ListMessageMoveTasks"}
	}, "sqs:CancelMessageMoveTask"},
	"a coordinator that may write effects": {func(t *testing.T, tpl map[string]any) { checkRecordGrants(t, tpl, readRecordGrants(t)) }, func(t *testing.T, tpl map[string]any) {
		cond := at(t, statementBySid(t, tpl, "CoordinatorRole", "State"), "Condition", "ForAllValues:StringLike").(map[string]any)
		cond["dynamodb:LeadingKeys"] = append(slices.Clone(cond["dynamodb:LeadingKeys"].([]any)), "EFFECT#*")
	}, "the record kinds it may"},
	"a consumer on every record": {func(t *testing.T, tpl map[string]any) { checkRecordGrants(t, tpl, readRecordGrants(t)) }, func(t *testing.T, tpl map[string]any) {
		delete(statementBySid(t, tpl, "ConsumerRole", "State"), "Condition")
	}, "without a ForAllValues:StringLike dynamodb:LeadingKeys condition"},
	"a scan": {func(t *testing.T, tpl map[string]any) { checkRecordGrants(t, tpl, readRecordGrants(t)) }, func(t *testing.T, tpl map[string]any) {
		st := statementBySid(t, tpl, "OperatorPolicy", "State")
		st["Action"] = append(slices.Clone(st["Action"].([]any)), "dynamodb:Scan")
	}, "not addressed by partition key"},
}

// The environment variables that make this test binary a child running
// one broken template's check.
const (
	envBrokenCase     = "BATON_SAMTEMPLATE_BROKEN_CASE"
	envBrokenTemplate = "BATON_SAMTEMPLATE_BROKEN_TEMPLATE"
)

// TestChecksRefuseBrokenTemplates runs each check, in a child process
// (a failed check ends its test), on the expanded template broken the way
// the check must refuse.
func TestChecksRefuseBrokenTemplates(t *testing.T) {
	t.Parallel()
	tpl := expanded(t)
	raw, err := json.Marshal(tpl)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "expanded.json")
	require.NoError(t, os.WriteFile(file, raw, 0o600))
	for name, c := range brokenTemplates {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenTemplateChild$", "-test.v")
			cmd.Env = append(os.Environ(), envBrokenCase+"="+name, envBrokenTemplate+"="+file)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "the check passed:\n%s", out)
			require.Contains(t, string(out), "broken: "+name, "the check failed on the template as it is:\n%s", out)
			require.Contains(t, string(out), "--- FAIL: TestBrokenTemplateChild", "%s", out)
			require.Contains(t, string(out), c.want, "%s", out)
		})
	}
}

// TestBrokenTemplateChild is TestChecksRefuseBrokenTemplates' child.
func TestBrokenTemplateChild(t *testing.T) {
	name := os.Getenv(envBrokenCase)
	if name == "" {
		t.Skip("run by TestChecksRefuseBrokenTemplates")
	}
	c, ok := brokenTemplates[name]
	require.True(t, ok, name)
	raw, err := os.ReadFile(os.Getenv(envBrokenTemplate))
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tpl map[string]any
	require.NoError(t, dec.Decode(&tpl))
	c.check(t, tpl) // passes on the template as it is…
	c.breakf(t, tpl)
	fmt.Println("broken:", name)
	c.check(t, tpl) // …and fails once broken
}
