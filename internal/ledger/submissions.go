package ledger

import "context"

// SubmissionLister is the capability of a ledger that lists a job's
// submissions (their runs are kept under TickOf's "job+key", which
// ListRuns does not read): what status shows beside the job's ticks.
// Every engine's ledger has it.
type SubmissionLister interface {
	// ListSubmissions returns the current run of each submission of
	// p.Job, newest opened first (a replayed submission by the opening of
	// its latest generation), at most p.Limit (0 means 20); p.Before is
	// ignored. A run removed after its retention is not listed.
	ListSubmissions(ctx context.Context, p ListRunsParams) ([]Run, error)
}
