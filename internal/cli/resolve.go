package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/rfc3339"
)

// futureSkew is how far past this machine's clock a time given on the
// command line may be: clocks of operators' machines drift a little.
const futureSkew = 5 * time.Second

// timeExample is shown with every time-parsing error.
const timeExample = "RFC 3339, e.g. 2026-11-21T12:01:00Z or 2026-11-21T13:01:00+01:00"

// parseTime parses the value of the time flag name (RFC 3339, with or
// without fractional seconds). It refuses an empty value and a time more
// than futureSkew after now: no tick after now has come yet.
func parseTime(name, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, usagef("--%s is required (%s)", name, timeExample)
	}
	t, err := rfc3339.Parse(v)
	if err != nil {
		return time.Time{}, usagef("--%s: %v (%s)", name, err, timeExample)
	}
	if t.After(now.Add(futureSkew)) {
		return time.Time{}, usagef("--%s %s is in the future (now is %s): only ticks whose time has come can run",
			name, t.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return t.UTC(), nil
}

// lookupJob returns the job called name; an unknown name is bad input.
// No name (no --job, no $BATON_JOB) is the catalog's only job, and bad
// usage when it has several.
func lookupJob(c *baton.Catalog, name string) (baton.Job, error) {
	if name == "" {
		if c.Len() == 1 {
			return c.Jobs()[0], nil
		}
		return baton.Job{}, usagef("--job is required: the catalog has %d jobs (%s)", c.Len(), strings.Join(c.Names(), ", "))
	}
	j, err := c.Lookup(name)
	if err != nil {
		return baton.Job{}, usageError{err}
	}
	return j, nil
}

// parseRun parses a run id given with --run and checks its job exists.
func parseRun(c *baton.Catalog, v string) (ledger.RunID, baton.Job, error) {
	if v == "" {
		return ledger.RunID{}, baton.Job{}, usagef("--run is required (a run id such as fx@2026-11-21T12:01:00Z#1; 'baton status' lists them)")
	}
	id, err := ledger.ParseRunID(v)
	if err != nil {
		return ledger.RunID{}, baton.Job{}, usagef("--run: %v", err)
	}
	j, err := lookupJob(c, id.Job)
	if err != nil {
		return ledger.RunID{}, baton.Job{}, err
	}
	return id, j, nil
}

// checkAsset refuses a name that is neither an asset nor a derived item of j.
func checkAsset(j baton.Job, asset string) error {
	if jobspec.RunTime(j) {
		return usagef("job %s computes its items when its run opens: an item of it cannot be named here; replay the tick instead", j.Name)
	}
	if asset == "" {
		return usagef("--asset is required (one of %s)", strings.Join(exec.SortedItemNames(j), ", "))
	}
	if !j.HasItem(asset) {
		return usagef("unknown asset %q: job %s has %s", asset, j.Name, strings.Join(exec.SortedItemNames(j), ", "))
	}
	return nil
}

// errSuperseded matches the error of currentRun for an older generation.
var errSuperseded = errors.New("superseded")

// currentRun returns the tick's run record when id names its current
// generation. A tick without a run or a generation beyond the current one
// is bad input; an older generation is an error matching errSuperseded
// (with the current record).
func currentRun(ctx context.Context, l ledger.Store, id ledger.RunID) (ledger.Run, error) {
	run, err := ledger.GetRunOf(ctx, l, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return ledger.Run{}, usagef("unknown run %s: tick %s has no run ('baton status --job %s' lists the runs)", id, jobspec.TickKey(id), id.Job)
	}
	if err != nil {
		return ledger.Run{}, err
	}
	switch {
	case id.Generation > run.ID.Generation:
		return run, usagef("unknown run %s: the tick's latest generation is %s", id, run.ID)
	case id.Generation < run.ID.Generation:
		return run, fmt.Errorf("run %s is %w by %s", id, errSuperseded, run.ID)
	}
	return run, nil
}

// operatorOwner names this operator process in leases and claims.
func operatorOwner() string {
	host, _ := os.Hostname()
	user := os.Getenv("USER")
	if user == "" {
		user = "operator"
	}
	return fmt.Sprintf("%s@%s/%d", user, host, os.Getpid())
}

// given reports whether the flag called name was set on the command line.
func given(fs *pflag.FlagSet, name string) bool { return fs.Changed(name) }

// rfc formats t for humans and scripts alike; "-" for the zero time.
func rfc(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// ago formats a duration for tables: rounded to what a reader needs.
func ago(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + ago(-d)
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	default:
		return d.Round(time.Minute).String()
	}
}
