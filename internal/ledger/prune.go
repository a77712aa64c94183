package ledger

import (
	"context"
	"time"
)

// PruneParams are the inputs of Pruner.Prune.
type PruneParams struct {
	// Job whose runs are pruned: its ticks' runs and its submissions'.
	Job string
	// Before: runs finished before it are removed, with every record of
	// theirs (items of every generation, settle marks, item pages).
	Before time.Time
	// MaxRecords bounds the records one call deletes (0 means
	// DefaultPruneRecords), so
	// that a pass takes bounded work whatever a run's size; a run whose
	// records do not fit is finished by the next call (its run record is
	// removed last).
	MaxRecords int
}

// DefaultPruneRecords is the bound of one Prune call when
// PruneParams.MaxRecords is 0.
const DefaultPruneRecords = 5000

// Limit returns MaxRecords, or DefaultPruneRecords when it is not set.
func (p PruneParams) Limit() int {
	if p.MaxRecords <= 0 {
		return DefaultPruneRecords
	}
	return p.MaxRecords
}

// PruneResult says what Prune removed.
type PruneResult struct {
	Runs    int // run records removed (the run is gone)
	Records int // records removed in all, runs included
	// More is true when the call stopped at MaxRecords with prunable
	// records left.
	More bool
}

// Pruner is the capability of a ledger whose records are not removed by
// its backend (as DynamoDB's time to live removes them): the embedded
// store prunes finished runs past a job's retention itself, a pass at a
// time. A store without it keeps what its backend keeps.
type Pruner interface {
	Prune(ctx context.Context, p PruneParams) (PruneResult, error)
}
