package cli

import (
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/batonhq/baton/internal/lambdaapp"
	"github.com/batonhq/baton/internal/lambdaevent"
)

// triggerAgeFlag is --trigger-age of the commands that decode coordinator
// triggers (invoke, replay event, serve): the age bound of scheduled
// triggers, the one the coordinator function applies. Its default is
// $BATON_TRIGGER_MAX_AGE when set, else lambdaevent.DefaultTriggerAge, as
// in the function.
type triggerAgeFlag struct {
	d  time.Duration
	fs *pflag.FlagSet
}

const triggerAgeUsage = "refuse scheduled triggers (rule event, Scheduler payload) older than this as stale deliveries, as the coordinator function does " +
	"(default $" + lambdaapp.EnvTriggerAge + " when set, else 6h; 0: no bound, for the fixed ticks of the fixtures in events/; replays are exempt)"

func (a *triggerAgeFlag) register(fs *pflag.FlagSet) {
	a.fs = fs
	fs.DurationVar(&a.d, "trigger-age", lambdaevent.DefaultTriggerAge, triggerAgeUsage)
}

// value returns the bound: the flag's when given, else the variable's,
// else the default. A negative or unparsable one is bad usage.
func (a *triggerAgeFlag) value() (time.Duration, error) {
	if a.fs != nil && a.fs.Changed("trigger-age") {
		if a.d < 0 {
			return 0, usagef("--trigger-age must not be negative, got %s", a.d)
		}
		return a.d, nil
	}
	if s := os.Getenv(lambdaapp.EnvTriggerAge); strings.TrimSpace(s) != "" {
		d, err := lambdaevent.ParseTriggerAge(s)
		if err != nil {
			return 0, usagef("$%s: %v", lambdaapp.EnvTriggerAge, err)
		}
		return d, nil
	}
	return lambdaevent.DefaultTriggerAge, nil
}
