package samtemplate

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/jobspec"
)

// EnvJobQueueURLs is the variable that names the job queues' URLs to both
// functions: "name=url,name=url" (package lambdaapp reads it); in a
// template, !Sub "noisy=${NoisyQueue}".
const EnvJobQueueURLs = "BATON_JOB_QUEUE_URLS"

// subEntry is one "name=${Resource}" of the variable's !Sub.
var subEntry = regexp.MustCompile(`^([^=,\s]+)=\$\{([A-Za-z0-9]+)\}$`)

// CheckQueues checks the template's job queues (baton.Job.Queue) against
// the catalog. For every queue a job names:
//   - both functions get its URL: EnvJobQueueURLs, a !Sub of
//     "name=${Resource}" entries, names it, on each function or in the
//     Globals, and the resource is an AWS::SQS::Queue that dead-letters
//     to the same queue as the work queue;
//   - a consumer function reads it with an SQS event of its own whose
//     ScalingConfig.MaximumConcurrency is the queue's MaxConcurrency, and
//     reports batch item failures.
//
// A queue the template names that no job of the catalog uses is an error
// too (its messages would have no job). A catalog without job queues
// needs nothing. The error names each queue, job and function wrong.
func CheckQueues(tpl map[string]any, catalog *baton.Catalog) error {
	resources, _ := tpl["Resources"].(map[string]any)
	globals, _ := tpl["Globals"].(map[string]any)
	globalFn, _ := globals["Function"].(map[string]any)
	want := jobspec.Queues(catalog)
	var errs []error

	var fns []string
	for _, fn := range sortedKeys(resources) {
		if res, _ := resources[fn].(map[string]any); res["Type"] == "AWS::Serverless::Function" {
			fns = append(fns, fn)
		}
	}
	// The job queues each function is told about: name → resource.
	told := map[string]map[string]string{}
	for _, fn := range fns {
		props := propsOf(resources[fn])
		v, ok := envVar(props, EnvJobQueueURLs)
		if !ok {
			v, ok = envVar(globalFn, EnvJobQueueURLs)
		}
		told[fn] = map[string]string{}
		if !ok {
			continue
		}
		entries, err := subEntries(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", fn, EnvJobQueueURLs, err))
			continue
		}
		told[fn] = entries
	}

	for _, name := range sortedKeys(anyMap(want)) {
		jobs := want[name]
		j, _ := catalog.Lookup(jobs[0])
		what := fmt.Sprintf("queue %s (jobs %s)", name, strings.Join(jobs, ", "))
		resource := ""
		for _, fn := range fns {
			r, ok := told[fn][name]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: function %s is not given its URL: add %s=${<queue resource>} to its %s", what, fn, name, EnvJobQueueURLs))
				continue
			}
			if resource != "" && r != resource {
				errs = append(errs, fmt.Errorf("%s: the functions name different resources (%s, %s)", what, resource, r))
			}
			resource = r
		}
		if resource == "" {
			continue
		}
		if err := checkQueueResource(resources, resource); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
			continue
		}
		errs = append(errs, checkQueueEvent(resources, fns, resource, what, j.Queue.Concurrency()))
		errs = append(errs, checkQueueGrants(resources, fns, resource, what))
	}
	for _, fn := range fns {
		for name := range told[fn] {
			if _, ok := want[name]; !ok {
				errs = append(errs, fmt.Errorf("function %s: %s names queue %s, which no job of the catalog uses", fn, EnvJobQueueURLs, name))
			}
		}
	}
	return errors.Join(errs...)
}

// checkQueueResource checks that resource is a queue dead-lettering where
// the work queues do.
func checkQueueResource(resources map[string]any, resource string) error {
	res, _ := resources[resource].(map[string]any)
	if res["Type"] != "AWS::SQS::Queue" {
		return fmt.Errorf("%s is not an AWS::SQS::Queue", resource)
	}
	props := propsOf(res)
	redrive, _ := props["RedrivePolicy"].(map[string]any)
	target := getAttOf(redrive["deadLetterTargetArn"])
	if target == "" {
		return fmt.Errorf("%s has no RedrivePolicy to the dead-letter queue: its poison messages would never leave it", resource)
	}
	work := propsOf(resources["WorkQueue"])
	if wr, _ := work["RedrivePolicy"].(map[string]any); wr != nil && getAttOf(wr["deadLetterTargetArn"]) != target {
		return fmt.Errorf("%s dead-letters to %s, not to the work queue's %s ('baton dlq' reads that one)", resource, target, getAttOf(wr["deadLetterTargetArn"]))
	}
	return nil
}

// checkQueueEvent checks that a consumer reads resource with its own
// event and concurrency.
func checkQueueEvent(resources map[string]any, fns []string, resource, what string, concurrency int) error {
	for _, fn := range fns {
		events, _ := propsOf(resources[fn])["Events"].(map[string]any)
		for _, id := range sortedKeys(events) {
			ev, _ := events[id].(map[string]any)
			p := propsOf(ev)
			if ev["Type"] != "SQS" || getAttOf(p["Queue"]) != resource {
				continue
			}
			scaling, _ := p["ScalingConfig"].(map[string]any)
			got, ok := number(scaling["MaximumConcurrency"])
			switch {
			case !ok:
				return fmt.Errorf("%s: %s.%s sets no ScalingConfig.MaximumConcurrency: set %d, the queue's MaxConcurrency", what, fn, id, concurrency)
			case got != float64(concurrency):
				return fmt.Errorf("%s: %s.%s has ScalingConfig.MaximumConcurrency %v, the queue's MaxConcurrency is %d", what, fn, id, got, concurrency)
			}
			types, _ := p["FunctionResponseTypes"].([]any)
			if len(types) != 1 || types[0] != "ReportBatchItemFailures" {
				return fmt.Errorf("%s: %s.%s must report batch item failures (FunctionResponseTypes: [ReportBatchItemFailures])", what, fn, id)
			}
			return nil
		}
	}
	return fmt.Errorf("%s: no consumer function reads %s: add an SQS event on it with ScalingConfig.MaximumConcurrency %d", what, resource, concurrency)
}

// checkQueueGrants checks that each function's role may send to the
// queue (the coordinator's fan-out, the consumer's fan-in), and that a
// consumer reading it may receive, delete and change visibility.
func checkQueueGrants(resources map[string]any, fns []string, resource, what string) error {
	var errs []error
	for _, fn := range fns {
		props := propsOf(resources[fn])
		role := getAttOf(props["Role"])
		if role == "" {
			continue // SAM's own role: its policies are SAM's
		}
		need := []string{"sqs:SendMessage"}
		if slicesContains(sqsQueues(props), resource) {
			need = append(need, "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility")
		}
		for _, action := range need {
			if !roleGrants(resources[role], action, resource) {
				errs = append(errs, fmt.Errorf("%s: role %s of %s does not grant %s on %s", what, role, fn, action, resource))
			}
		}
	}
	return errors.Join(errs...)
}

// roleGrants reports whether an Allow statement of the role's inline
// policies grants action on !GetAtt resource.Arn.
func roleGrants(role any, action, resource string) bool {
	policies, _ := propsOf(role)["Policies"].([]any)
	for _, p := range policies {
		pm, _ := p.(map[string]any)
		doc, _ := pm["PolicyDocument"].(map[string]any)
		statements, _ := doc["Statement"].([]any)
		for _, st := range statements {
			sm, _ := st.(map[string]any)
			if sm["Effect"] != "Allow" || !listHas(sm["Action"], func(v any) bool { return v == action }) {
				continue
			}
			if listHas(sm["Resource"], func(v any) bool { return getAttOf(v) == resource }) {
				return true
			}
		}
	}
	return false
}

// listHas reports whether v, one value or a list, holds one that ok accepts.
func listHas(v any, ok func(any) bool) bool {
	if l, isList := v.([]any); isList {
		for _, e := range l {
			if ok(e) {
				return true
			}
		}
		return false
	}
	return ok(v)
}

func slicesContains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

func propsOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	p, _ := m["Properties"].(map[string]any)
	return p
}

func envVar(props map[string]any, name string) (any, bool) {
	env, _ := props["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	v, ok := vars[name]
	return v, ok
}

// subEntries reads "name=${Resource},…" from a !Sub.
func subEntries(v any) (map[string]string, error) {
	if v == "" || v == nil {
		return map[string]string{}, nil // no job queue
	}
	m, _ := v.(map[string]any)
	s, ok := m["Fn::Sub"].(string)
	if !ok {
		return nil, errors.New(`want !Sub "name=${QueueResource},…"`)
	}
	out := map[string]string{}
	for _, e := range strings.Split(s, ",") {
		sub := subEntry.FindStringSubmatch(strings.TrimSpace(e))
		if sub == nil {
			return nil, fmt.Errorf(`%q: want name=${QueueResource}`, e)
		}
		out[sub[1]] = sub[2]
	}
	return out, nil
}

func getAttOf(v any) string {
	m, _ := v.(map[string]any)
	parts, _ := m["Fn::GetAtt"].([]any)
	if len(parts) == 0 {
		return ""
	}
	s, _ := parts[0].(string)
	return s
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, !math.IsNaN(n)
	case string: // CloudFormation takes numbers as strings too
		f, err := strconv.ParseFloat(n, 64)
		return f, err == nil
	}
	return 0, false
}

func anyMap(m map[string][]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
