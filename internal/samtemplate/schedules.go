package samtemplate

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/lambdaevent"
)

// Schedule is one schedule event of a function in a template.
type Schedule struct {
	Function   string // the AWS::Serverless::Function's logical id
	Event      string // the event's name
	Type       string // ScheduleV2 (EventBridge Scheduler) or Schedule (a rule)
	Expression string
	// TimeZone is a ScheduleV2's ScheduleExpressionTimezone ("" when it
	// has none: UTC, as a rule's always is).
	TimeZone string
	// State is ENABLED or DISABLED ("" when not set: enabled).
	State string
	Job   string // the job its input names ("" when it names none)
}

// Schedules returns the schedule events of the template's functions,
// sorted by function and event, and the job each one's trigger names, as
// the coordinator decodes it (jobs: the catalog's names). A schedule whose
// trigger the coordinator would refuse is an error naming it.
func Schedules(tpl map[string]any, jobs []string) ([]Schedule, error) {
	resources, _ := tpl["Resources"].(map[string]any)
	var out []Schedule
	var errs []error
	for fn, r := range resources {
		res, _ := r.(map[string]any)
		if res["Type"] != "AWS::Serverless::Function" {
			continue
		}
		props, _ := res["Properties"].(map[string]any)
		events, _ := props["Events"].(map[string]any)
		for name, e := range events {
			ev, _ := e.(map[string]any)
			typ, _ := ev["Type"].(string)
			if typ != "ScheduleV2" && typ != "Schedule" {
				continue
			}
			p, _ := ev["Properties"].(map[string]any)
			s := Schedule{Function: fn, Event: name, Type: typ}
			var err error
			expr := p["ScheduleExpression"]
			if expr == nil {
				expr = p["Schedule"] // a rule's property name
			}
			if s.Expression, err = paramString(tpl, expr); err != nil {
				errs = append(errs, fmt.Errorf("%s event %s: schedule expression: %w", fn, name, err))
				continue
			}
			if s.TimeZone, err = paramString(tpl, p["ScheduleExpressionTimezone"]); err != nil {
				errs = append(errs, fmt.Errorf("%s event %s: ScheduleExpressionTimezone: %w", fn, name, err))
				continue
			}
			if s.State, err = paramString(tpl, p["State"]); err != nil {
				errs = append(errs, fmt.Errorf("%s event %s: State: %w", fn, name, err))
				continue
			}
			job, err := scheduleJob(typ, p, jobs)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s event %s: %w", fn, name, err))
				continue
			}
			s.Job = job
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Function != out[j].Function {
			return out[i].Function < out[j].Function
		}
		return out[i].Event < out[j].Event
	})
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return out, errors.Join(errs...)
}

// paramString returns v, a string or a !Ref to a template parameter (its
// Default: what a deploy without overrides uses), or "" when v is absent.
func paramString(tpl map[string]any, v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case map[string]any:
		ref, ok := x["Ref"].(string)
		if !ok || len(x) != 1 {
			break
		}
		params, _ := tpl["Parameters"].(map[string]any)
		p, ok := params[ref].(map[string]any)
		if !ok {
			return "", fmt.Errorf("!Ref %s is not a parameter of the template", ref)
		}
		def, ok := p["Default"].(string)
		if !ok {
			return "", fmt.Errorf("parameter %s has no string Default to check", ref)
		}
		return def, nil
	}
	return "", fmt.Errorf("%v: want a string or a !Ref to a parameter", v)
}

// scheduleJob decodes the trigger a schedule sends, as the coordinator
// will, and returns its job.
func scheduleJob(typ string, p map[string]any, jobs []string) (string, error) {
	fired := time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	var payload string
	input, ok := p["Input"]
	switch {
	case ok:
		s, isString := input.(string)
		if !isString {
			return "", errors.New("its Input is not a JSON string")
		}
		payload = strings.ReplaceAll(s, "<aws.scheduler.scheduled-time>", fired.Format(time.RFC3339))
	case typ == "ScheduleV2":
		return "", errors.New(`no Input: a Scheduler target needs {"job": …, "scheduledTime": "<aws.scheduler.scheduled-time>"}`)
	default: // a rule without input sends the rule event itself
		b, _ := json.Marshal(map[string]any{
			"source": lambdaevent.RuleSource, "detail-type": lambdaevent.RuleDetailType,
			"time": fired.Format(time.RFC3339), "detail": map[string]any{},
		})
		payload = string(b)
	}
	tr, err := lambdaevent.DecodeTrigger(lambdaevent.TriggerParams{Payload: []byte(payload), Jobs: jobs, Now: fired})
	if err != nil {
		return "", err
	}
	return tr.Job, nil
}

// CheckSchedules checks a template against a catalog: every scheduled
// job has exactly one schedule, whose expression is the job's and whose
// trigger names the job; a job without a schedule (on demand, or started
// by a chain) has none, which would tick it without a parent; no schedule
// names a job the catalog does not hold. The error names each job (or
// schedule) that is wrong and what to change.
func CheckSchedules(tpl map[string]any, catalog *baton.Catalog) error {
	schedules, err := Schedules(tpl, catalog.Names())
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	byJob := map[string][]Schedule{}
	for _, s := range schedules {
		byJob[s.Job] = append(byJob[s.Job], s)
	}
	for _, j := range catalog.Jobs() {
		got := byJob[j.Name]
		if !j.Scheduled() {
			for _, s := range got {
				errs = append(errs, fmt.Errorf("job %s has no schedule (it runs on demand or by a chain), but the template's %s.%s ticks it (%s): remove that event",
					j.Name, s.Function, s.Event, s.Expression))
			}
			continue
		}
		switch {
		case len(got) == 0:
			errs = append(errs, fmt.Errorf("job %s: no schedule in the template: add to the coordinator function's Events a ScheduleV2 event "+
				`with ScheduleExpression %q and Input '{"job": %q, "scheduledTime": "<aws.scheduler.scheduled-time>"}'`,
				j.Name, j.Schedule, j.Name))
		case len(got) > 1:
			var names []string
			for _, s := range got {
				names = append(names, s.Function+"."+s.Event)
			}
			errs = append(errs, fmt.Errorf("job %s: %d schedules (%s); keep one", j.Name, len(got), strings.Join(names, ", ")))
		case normalize(got[0].Expression) != normalize(j.Schedule):
			errs = append(errs, fmt.Errorf("job %s: the template's schedule %s.%s is %q, the job's is %q",
				j.Name, got[0].Function, got[0].Event, got[0].Expression, j.Schedule))
		case zoneOrUTC(got[0].TimeZone) != zoneOrUTC(j.TimeZone) && got[0].Type != "ScheduleV2":
			errs = append(errs, fmt.Errorf("job %s: its TimeZone is %s, but %s.%s is an EventBridge rule, which reads cron in UTC: "+
				"use a ScheduleV2 event with ScheduleExpressionTimezone %q", j.Name, j.TimeZone, got[0].Function, got[0].Event, j.TimeZone))
		case zoneOrUTC(got[0].TimeZone) != zoneOrUTC(j.TimeZone):
			errs = append(errs, fmt.Errorf("job %s: the template's schedule %s.%s is read in time zone %s, the job's in %s: "+
				"set ScheduleExpressionTimezone to %q", j.Name, got[0].Function, got[0].Event,
				zoneOrUTC(got[0].TimeZone), zoneOrUTC(j.TimeZone), zoneOrUTC(j.TimeZone)))
		case got[0].State != "" && got[0].State != "ENABLED" && got[0].State != "DISABLED":
			errs = append(errs, fmt.Errorf("job %s: the template's schedule %s.%s has State %q: want ENABLED or DISABLED",
				j.Name, got[0].Function, got[0].Event, got[0].State))
		}
	}
	return errors.Join(errs...)
}

func zoneOrUTC(zone string) string {
	if zone == "" {
		return "UTC"
	}
	return zone
}

func normalize(expr string) string { return strings.Join(strings.Fields(expr), " ") }
