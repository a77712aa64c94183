package samtemplate

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/jobspec"
)

// samDefaultTimeout is a function's Timeout when neither it nor the
// template's Globals set one (SAM's default).
const samDefaultTimeout = 3 * time.Second

// sqsDefaultVisibility is a queue's VisibilityTimeout when it sets none.
const sqsDefaultVisibility = 30 * time.Second

// CheckTimeouts checks the template's consumer functions (those with an
// SQS event) against the catalog's limits. A claim on an item never
// outlives the consumer's invocation (its deadline less the job's
// DeadlineMargin), and no heartbeat extends it further, so:
//   - each consumer function's Timeout is at least the longest item lease
//     of every job (Job.MaxItemLease: Limits.ItemLease, or a derived
//     item's Lease);
//   - the queue its SQS event reads, when the template declares it, hides
//     a message at least as long as the function's Timeout (Lambda refuses
//     an event source whose queue's VisibilityTimeout is shorter).
//
// A template without a consumer function has nothing to check. A Timeout
// or VisibilityTimeout that is not a number (a parameter, an intrinsic) is
// an error: it cannot be checked. The error names each function and job
// that is wrong and the value to set.
func CheckTimeouts(tpl map[string]any, catalog *baton.Catalog) error {
	resources, _ := tpl["Resources"].(map[string]any)
	globals, _ := tpl["Globals"].(map[string]any)
	globalFn, _ := globals["Function"].(map[string]any)
	var errs []error
	for _, fn := range sortedKeys(resources) {
		res, _ := resources[fn].(map[string]any)
		if res["Type"] != "AWS::Serverless::Function" {
			continue
		}
		props, _ := res["Properties"].(map[string]any)
		queues := sqsQueues(props)
		if len(queues) == 0 {
			continue // not a consumer
		}
		timeout, err := seconds(props, globalFn, "Timeout", samDefaultTimeout)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", fn, err))
			continue
		}
		for _, j := range catalog.Jobs() {
			if lease := jobspec.MaxItemLease(j); timeout < lease {
				errs = append(errs, fmt.Errorf("job %s: consumer function %s has Timeout %s, below the job's longest item lease %s: "+
					"a claim cannot outlive the invocation and no heartbeat extends it past that; set Timeout to at least %d",
					j.Name, fn, timeout, lease, int64(math.Ceil(lease.Seconds()))))
			}
		}
		for _, q := range queues {
			qres, _ := resources[q].(map[string]any)
			if qres["Type"] != "AWS::SQS::Queue" {
				continue // not declared here: nothing to read
			}
			qprops, _ := qres["Properties"].(map[string]any)
			vis, err := seconds(qprops, nil, "VisibilityTimeout", sqsDefaultVisibility)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", q, err))
				continue
			}
			if vis < timeout {
				errs = append(errs, fmt.Errorf("queue %s has VisibilityTimeout %s, below the Timeout %s of its consumer function %s: "+
					"set it to at least %d (AWS advises 6 times the Timeout)", q, vis, timeout, fn, int64(timeout.Seconds())))
			}
		}
	}
	return errors.Join(errs...)
}

// sqsQueues returns the logical ids of the queues the function's SQS
// events read (an event whose Queue is not a !GetAtt of a resource counts
// as ""), sorted.
func sqsQueues(props map[string]any) []string {
	events, _ := props["Events"].(map[string]any)
	var out []string
	for _, e := range events {
		ev, _ := e.(map[string]any)
		if ev["Type"] != "SQS" {
			continue
		}
		p, _ := ev["Properties"].(map[string]any)
		name := ""
		if ga, ok := p["Queue"].(map[string]any); ok {
			if parts, ok := ga["Fn::GetAtt"].([]any); ok && len(parts) > 0 {
				name, _ = parts[0].(string)
			}
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// seconds reads a whole number of seconds under key in props, else in
// globals, else def (a key without a value is absent).
func seconds(props, globals map[string]any, key string, def time.Duration) (time.Duration, error) {
	v := props[key]
	if v == nil {
		if v = globals[key]; v == nil {
			return def, nil
		}
	}
	switch n := v.(type) {
	case int64:
		return time.Duration(n) * time.Second, nil
	case float64:
		return time.Duration(n * float64(time.Second)), nil
	}
	return 0, fmt.Errorf("%s is %v, not a number of seconds: it cannot be checked against the jobs' limits", key, v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
