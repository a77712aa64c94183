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
	Job        string // the job its input names ("" when it names none)
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
			s.Expression, _ = p["ScheduleExpression"].(string)
			if s.Expression == "" {
				s.Expression, _ = p["Schedule"].(string) // a rule's property name
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

// CheckSchedules checks a template against a catalog: every job has
// exactly one schedule, whose expression is the job's and whose trigger
// names the job; no schedule names a job the catalog does not hold. The
// error names each job (or schedule) that is wrong and what to change.
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
		}
	}
	return errors.Join(errs...)
}

func normalize(expr string) string { return strings.Join(strings.Fields(expr), " ") }
