package ledger

import "context"

// ListSubmissionsParams are the inputs of SubmissionLister.ListSubmissions.
type ListSubmissionsParams struct {
	Job   string
	Limit int // at most this many; 0 means 20
}

// SubmissionLister is an optional ability of a Store: listing a job's
// submissions, whose run records are kept under "job+key" (see TickOf) and
// which ListRuns therefore does not list. Callers find it by type
// assertion; a store without it lets a submission be read by its key
// (GetRunOf) but not listed.
type SubmissionLister interface {
	// ListSubmissions returns the run records of Job's submissions, one
	// per dedupe key (its current generation), the most recent first, at
	// most Limit: by update time where the store orders its run records
	// by it (the embedded store, PostgreSQL), by the opening of the
	// current generation on DynamoDB (one index record per opening). A
	// run removed after its retention is not listed.
	ListSubmissions(ctx context.Context, p ListSubmissionsParams) ([]Run, error)
}
