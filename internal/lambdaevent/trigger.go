package lambdaevent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/rfc3339"
	"github.com/batonhq/baton/internal/strictjson"
)

// ErrBadTrigger matches every error DecodeTrigger returns.
var ErrBadTrigger = errors.New("bad coordinator trigger")

// The rule event's fixed fields.
const (
	RuleSource     = "aws.events"
	RuleDetailType = "Scheduled Event"
)

// Source says which shape a trigger arrived in.
type Source string

const (
	SourceRule      Source = "rule"      // EventBridge rule event
	SourceScheduler Source = "scheduler" // EventBridge Scheduler payload
	SourceReplay    Source = "replay"    // manual replay payload
	// SourceRuleInput is an EventBridge rule's constant input {"job": …}:
	// the event itself is replaced by the input, so the trigger time is
	// the time it arrives.
	SourceRuleInput Source = "rule_input"
)

// Trigger is the decoded coordinator input.
type Trigger struct {
	Job    string
	At     time.Time // UTC: the rule event's time or the payload's scheduledTime
	Force  bool      // replay only: open the next generation whatever the run's state
	Source Source
	// EventID and Resources are the rule event's id and resources (rule
	// ARNs), kept for the logs; empty for the other shapes.
	EventID   string
	Resources []string
}

// DefaultTriggerAge is the age bound of scheduled triggers (rule event,
// rule input, Scheduler payload) that every entry point applies unless
// configured otherwise: the coordinator function ($BATON_TRIGGER_MAX_AGE),
// 'baton invoke', 'baton replay event' and 'baton serve' (--trigger-age,
// defaulting to the same variable). Lambda keeps an asynchronous event up
// to six hours, so no legitimate delivery is older. Replays (a payload
// with "force") are exempt everywhere. 0 waives the bound: the fixtures
// of events/ carry fixed ticks, and their documented invocations (sam
// local invoke with env.json, baton invoke) set it so.
const DefaultTriggerAge = 6 * time.Hour

// ParseTriggerAge parses a configured age bound: a non-negative Go
// duration (0 waives the bound).
func ParseTriggerAge(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a non-negative duration such as 6h or 30m (0: no bound)", s)
	}
	return d, nil
}

// TriggerParams are the inputs of DecodeTrigger.
type TriggerParams struct {
	Payload []byte
	// Jobs are the names of the catalog's jobs: a trigger must name one
	// of them. A rule event that names no job is accepted only when there
	// is exactly one.
	Jobs []string
	// Unscheduled, optional, are the jobs of Jobs without a schedule
	// (baton.Job.Scheduled is false: they run on demand or by a chain): a
	// trigger naming one is refused, as a trigger cannot tick it.
	Unscheduled []string
	Now         time.Time
	// Skew is how far after Now a trigger time may be (clock skew between
	// the sender and this function). A later time is rejected.
	Skew time.Duration
	// MaxAge, when positive, is how far before Now the time of a scheduled
	// trigger (rule, rule input, Scheduler) may be: an older one is a
	// stale delivery, refused (replay the tick instead). Replays are
	// exempt: an operator may replay any tick. Entry points set
	// DefaultTriggerAge unless configured; 0 is no bound.
	MaxAge time.Duration
}

// knownFields are the field names the decoder reads, in their one
// accepted spelling: encoding/json matches names case-insensitively, so a
// key that differs from one of these only in case is refused by name.
var knownFields = []string{"job", "scheduledTime", "force", "source", "detail-type", "time", "detail", "id", "resources"}

// directPayload is the Scheduler and replay shape. Pointers tell a missing
// field from a zero one.
type directPayload struct {
	Job           *string `json:"job"`
	ScheduledTime *string `json:"scheduledTime"`
	Force         *bool   `json:"force"`
}

// DecodeTrigger decodes the coordinator's input (see the package doc for
// the accepted shapes). Every error matches ErrBadTrigger and names what is
// wrong.
func DecodeTrigger(p TriggerParams) (Trigger, error) {
	t, err := decodeTrigger(p)
	if err != nil {
		return Trigger{}, fmt.Errorf("%w: %v", ErrBadTrigger, err)
	}
	return t, nil
}

func decodeTrigger(p TriggerParams) (Trigger, error) {
	payload := bytes.TrimSpace(p.Payload)
	if len(payload) == 0 {
		return Trigger{}, errors.New("empty payload")
	}
	fields, err := object(payload)
	if err != nil {
		return Trigger{}, err
	}
	var t Trigger
	switch {
	case has(fields, "detail-type") || has(fields, "source"):
		t, err = decodeRule(payload, fields, p.Jobs)
	case has(fields, "scheduledTime") || has(fields, "job") || has(fields, "force"):
		t, err = decodeDirect(payload, p.Now)
	default:
		return Trigger{}, fmt.Errorf("unknown payload shape with fields %s: want an EventBridge rule event, "+
			`{"job"}, {"job","scheduledTime"} or {"job","scheduledTime","force"}`, fieldNames(fields))
	}
	if err != nil {
		return Trigger{}, err
	}
	if !slices.Contains(p.Jobs, t.Job) {
		return Trigger{}, fmt.Errorf("%s trigger: job %q is not in this deployment's catalog (jobs: %s)",
			t.Source, t.Job, strings.Join(p.Jobs, ", "))
	}
	if slices.Contains(p.Unscheduled, t.Job) {
		return Trigger{}, fmt.Errorf("%s trigger: job %s has no schedule: it runs on demand (submit) or by a chain, and a trigger cannot tick it; "+
			"remove the schedule or rule that sends it", t.Source, t.Job)
	}
	if limit := p.Now.Add(p.Skew); t.At.After(limit) {
		return Trigger{}, fmt.Errorf("%s trigger: time %s is %s in the future (allowance %s)",
			t.Source, t.At.Format(time.RFC3339Nano), t.At.Sub(p.Now), p.Skew)
	}
	if p.MaxAge > 0 && t.Source != SourceReplay && t.At.Before(p.Now.Add(-p.MaxAge)) {
		return Trigger{}, fmt.Errorf("%s trigger: time %s is %s old, beyond the bound of %s for scheduled triggers: a stale delivery; replay the tick to run it "+
			"(or waive the bound: BATON_TRIGGER_MAX_AGE=0, --trigger-age 0, as for the fixtures of events/)",
			t.Source, t.At.Format(time.RFC3339Nano), p.Now.Sub(t.At).Round(time.Second), p.MaxAge)
	}
	return t, nil
}

// object decodes a JSON object's top level strictly (package
// strictjson): no trailing data, no duplicate keys, no key that differs
// from a known field only in case.
func object(payload []byte) (map[string]json.RawMessage, error) {
	fields, err := strictjson.Object(payload, knownFields)
	if errors.Is(err, strictjson.ErrNotObject) {
		return nil, fmt.Errorf("payload is not a JSON object: %s", abbreviate(payload))
	}
	return fields, err
}

func decodeRule(payload []byte, fields map[string]json.RawMessage, jobs []string) (Trigger, error) {
	var head struct {
		Source     *string `json:"source"`
		DetailType *string `json:"detail-type"`
		Time       *string `json:"time"`
	}
	if err := json.Unmarshal(payload, &head); err != nil {
		return Trigger{}, fmt.Errorf("rule event: %s", describeJSONError(err))
	}
	switch {
	case head.Source == nil:
		return Trigger{}, errors.New(`rule event: field "source" is missing`)
	case *head.Source != RuleSource:
		return Trigger{}, fmt.Errorf(`rule event: field "source" is %q, want %q`, *head.Source, RuleSource)
	case head.DetailType == nil:
		return Trigger{}, errors.New(`rule event: field "detail-type" is missing`)
	case *head.DetailType != RuleDetailType:
		return Trigger{}, fmt.Errorf(`rule event: field "detail-type" is %q, want %q`, *head.DetailType, RuleDetailType)
	case head.Time == nil:
		return Trigger{}, errors.New(`rule event: field "time" is missing`)
	}
	at, err := parseTime(*head.Time)
	if err != nil {
		return Trigger{}, fmt.Errorf(`rule event: field "time": %v`, err)
	}
	// The time is valid, so the SDK type decodes.
	var ev events.CloudWatchEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return Trigger{}, fmt.Errorf("rule event: %s", describeJSONError(err))
	}
	t := Trigger{At: at, Source: SourceRule, EventID: ev.ID, Resources: ev.Resources}
	detailJob, err := ruleDetailJob(ev.Detail)
	if err != nil {
		return Trigger{}, err
	}
	switch {
	case detailJob != "":
		t.Job = detailJob
	case len(jobs) == 1:
		t.Job = jobs[0]
	default:
		return Trigger{}, fmt.Errorf(`rule event: it names no job and the catalog has %d (%s): give the rule a constant input {"job": "<name>"}`,
			len(jobs), strings.Join(jobs, ", "))
	}
	return t, nil
}

// ruleDetailJob returns detail.job, or "" when the detail is absent, null
// or an object without a job.
func ruleDetailJob(detail json.RawMessage) (string, error) {
	d := bytes.TrimSpace(detail)
	if len(d) == 0 || string(d) == "null" {
		return "", nil
	}
	fields, err := object(d)
	if err != nil {
		return "", fmt.Errorf(`rule event: field "detail": %v`, err)
	}
	raw, ok := fields["job"]
	if !ok {
		return "", nil
	}
	var job string
	if err := json.Unmarshal(raw, &job); err != nil || job == "" {
		return "", fmt.Errorf(`rule event: field "detail.job" is not a non-empty string: %s`, abbreviate(raw))
	}
	return job, nil
}

func decodeDirect(payload []byte, now time.Time) (Trigger, error) {
	var d directPayload
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields() // the keys were checked exact by object
	if err := dec.Decode(&d); err != nil {
		return Trigger{}, fmt.Errorf("scheduler or replay payload: %s", describeJSONError(err))
	}
	src := SourceScheduler
	if d.Force != nil {
		src = SourceReplay
	}
	switch {
	case d.Job == nil:
		return Trigger{}, fmt.Errorf(`%s payload: field "job" is missing`, src)
	case *d.Job == "":
		return Trigger{}, fmt.Errorf(`%s payload: field "job" is empty`, src)
	case d.ScheduledTime == nil && d.Force != nil:
		return Trigger{}, fmt.Errorf(`%s payload: field "scheduledTime" is missing`, src)
	case d.ScheduledTime == nil:
		// A rule's constant input replaces the event: it carries no time,
		// so the trigger is the invocation's own time.
		return Trigger{Job: *d.Job, At: now.UTC(), Source: SourceRuleInput}, nil
	}
	at, err := parseTime(*d.ScheduledTime)
	if err != nil {
		return Trigger{}, fmt.Errorf(`%s payload: field "scheduledTime": %v`, src, err)
	}
	return Trigger{Job: *d.Job, At: at, Force: d.Force != nil && *d.Force, Source: src}, nil
}

// parseTime parses an RFC 3339 time (what EventBridge writes) strictly
// into UTC (package rfc3339).
func parseTime(s string) (time.Time, error) {
	return rfc3339.Parse(s)
}

// describeJSONError names the field of a type mismatch or an unknown field.
func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("field %q: want a JSON %s, got %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return "unknown field " + rest
	}
	return strings.TrimPrefix(msg, "json: ")
}

func jsonKind(goKind string) string {
	switch goKind {
	case "bool":
		return "boolean"
	case "string":
		return "string"
	case "map", "struct":
		return "object"
	case "slice", "array":
		return "array"
	default:
		return "number"
	}
}

func has(fields map[string]json.RawMessage, name string) bool {
	_, ok := fields[name]
	return ok
}

func fieldNames(fields map[string]json.RawMessage) string {
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, fmt.Sprintf("%q", n))
	}
	slices.Sort(names)
	return "[" + strings.Join(names, ", ") + "]"
}

// abbreviate returns at most 80 bytes of b for an error message.
func abbreviate(b []byte) string {
	const max = 80
	if len(b) <= max {
		return string(b)
	}
	return string(b[:max]) + "…"
}

// Unscheduled returns the names of c's jobs without a schedule, for
// TriggerParams.Unscheduled.
func Unscheduled(c *baton.Catalog) []string {
	var out []string
	for _, j := range c.Jobs() {
		if !j.Scheduled() {
			out = append(out, j.Name)
		}
	}
	return out
}
