package ledger

import (
	"context"
	"strings"
	"time"

	"github.com/batonhq/baton"
)

// RunID and ItemKey are the public vocabulary's (package baton); the
// ledger keys its records by them.
type (
	RunID   = baton.RunID
	ItemKey = baton.ItemKey
)

// ParseRunID parses the string form of a RunID (see baton.ParseRunID).
func ParseRunID(s string) (RunID, error) { return baton.ParseRunID(s) }

// ParseItemKey parses the string form of an ItemKey (see baton.ParseItemKey).
func ParseItemKey(s string) (ItemKey, error) { return baton.ParseItemKey(s) }

// ValidName returns an error naming what is wrong when s is not a valid job
// or asset name (see baton.ValidName).
func ValidName(what, s string) error { return baton.ValidName(what, s) }

// SubmissionNominal is the nominal time under which the record of a
// submission's run is kept (see TickOf): the Unix epoch, which no tick of
// a schedule has (ticks are refused before 1970 and a tick key's job has
// no '+').
var SubmissionNominal = time.Unix(0, 0).UTC()

// TickOf returns the (job, nominal time) under which the record of run id
// is kept, and which GetRun takes: the run's own for a tick; for the run
// of a submission, the job "job+submission" and SubmissionNominal. A
// submission's runs thus have a record of their own, generation after
// generation, like a tick's, without a new record kind; ListRuns of a job
// lists its ticks only.
func TickOf(id RunID) (string, time.Time) {
	if id.Submission != "" {
		return id.Job + "+" + id.Submission, SubmissionNominal
	}
	return id.Job, id.Nominal
}

// RunIDOf is the inverse of TickOf: the RunID of generation gen of the
// record kept under (job, nominal).
func RunIDOf(job string, nominal time.Time, gen int) RunID {
	if j, sub, ok := strings.Cut(job, "+"); ok {
		return RunID{Job: j, Submission: sub, Generation: gen}
	}
	return RunID{Job: job, Nominal: nominal, Generation: gen}
}

// ValidTickJob returns an error naming what is wrong when job is not what
// a run record may be kept under: a job name, or "job+submission" (both
// names as ValidName defines them).
func ValidTickJob(job string) error {
	if j, sub, ok := strings.Cut(job, "+"); ok {
		if err := ValidName("job", j); err != nil {
			return err
		}
		return ValidName("submission", sub)
	}
	return ValidName("job", job)
}

// GetRunOf reads the record of run id (see TickOf).
func GetRunOf(ctx context.Context, s Store, id RunID) (Run, error) {
	job, nominal := TickOf(id)
	return s.GetRun(ctx, job, nominal)
}
