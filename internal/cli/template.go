package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/batonhq/baton/internal/samtemplate"
)

const templateAbout = `Checks a SAM template against the catalog of jobs this binary serves.`

func templateSubcommands() []command {
	return []command{
		{synopsis: templateCheckSynopsis, summary: "check that every job of the catalog has its schedule in a SAM template", defineFunc: defineTemplateCheck,
			example: "  baton template check\n  baton template check --template my-stack/template.yaml --json"},
	}
}

const templateCheckSynopsis = `template check [--template FILE]

Reads a SAM template (default template.yaml) and checks its schedules
against the catalog: every scheduled job has exactly one schedule event
(ScheduleV2 or Schedule) on a function, with the job's expression, whose
input names the job the way the coordinator decodes it; a job without a
Schedule (on demand, or started by a chain) has none, which would tick it
without a parent (it still has its queue and consumers); no schedule
names a job the catalog does not hold. Every consumer function (one with an SQS event)
has a Timeout of at least each job's longest item lease (a claim, and so
a heartbeat, cannot outlive the invocation), and the queue it reads a
VisibilityTimeout of at least that Timeout. Every job queue
(baton.Job.Queue) has its queue resource, its URL in both functions'
BATON_JOB_QUEUE_URLS, an SQS event on the consumer with the queue's
ScalingConfig.MaximumConcurrency, and the roles' grants. Prints the schedules, or each
problem naming its job or function and exits with status 1. Run it in CI, or call
batoncli.CheckTemplate from a test.`

func defineTemplateCheck(e *env, fs *pflag.FlagSet) runFunc {
	path := fs.String("template", "template.yaml", "the SAM template")
	return func(ctx context.Context, _ []string) error { return templateCheck(ctx, e, *path) }
}

func templateCheck(_ context.Context, e *env, path string) error {
	tpl, err := samtemplate.Load(path)
	if err != nil {
		return usageError{err}
	}
	if err := errors.Join(samtemplate.CheckSchedules(tpl, e.catalog), samtemplate.CheckTimeouts(tpl, e.catalog), samtemplate.CheckQueues(tpl, e.catalog)); err != nil {
		fmt.Fprintf(e.stderr, "%s does not match the catalog:\n%v\n", path, err)
		e.set("problems", strings.Split(err.Error(), "\n"))
		return errFailed
	}
	schedules, _ := samtemplate.Schedules(tpl, e.catalog.Names())
	e.set("schedules", schedules)
	tw := tabwriter.NewWriter(e.text(), 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSCHEDULE\tEVENT")
	for _, s := range schedules {
		fmt.Fprintf(tw, "%s\t%s\t%s.%s (%s)\n", s.Job, s.Expression, s.Function, s.Event, s.Type)
	}
	unscheduled := []string{}
	for _, j := range e.catalog.Jobs() {
		if !j.Scheduled() {
			unscheduled = append(unscheduled, j.Name)
			fmt.Fprintf(tw, "%s\t-\tnone: on demand or by a chain\n", j.Name)
		}
	}
	e.set("unscheduled", unscheduled)
	tw.Flush()
	e.sayf("%s: every job of the catalog is scheduled as it is defined, and its consumers' timeouts cover its item leases\n", path)
	return nil
}
