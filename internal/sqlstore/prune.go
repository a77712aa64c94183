package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
)

// RunPart names the records of a run that Prune removes before the run
// record: each is deleted in chunks by its own statement.
type RunPart int

const (
	PartItems     RunPart = iota // the items of one generation
	PartMarks                    // its settle marks
	PartItemPages                // its item pages
)

// runParts are the parts in the order Prune removes them.
var runParts = []RunPart{PartItems, PartMarks, PartItemPages}

// PruneChunk is the most records one of Prune's deletes removes.
const PruneChunk = 1000

// FinishedRun is a run record as Prune finds it: its key and its latest
// generation.
type FinishedRun struct {
	Job        string
	Nominal    int64 // as stored (Nanos)
	Generation int
}

// PruneDB is what Prune needs of an engine: three statements, each run as
// the engine runs its writes, with its errors translated.
type PruneDB interface {
	// OldestFinished returns the run record of job or of one of its
	// submissions ("job+key") that finished earliest, before before; false
	// when there is none.
	OldestFinished(ctx context.Context, job string, before time.Time) (FinishedRun, bool, error)
	// DeleteChunk removes up to n records of part of the run (a
	// ledger.RunID's String) and returns how many it removed.
	DeleteChunk(ctx context.Context, part RunPart, run string, n int) (int, error)
	// DeleteRun removes the run record r.
	DeleteRun(ctx context.Context, r FinishedRun) error
}

// RunPruner is ledger.Pruner over an engine's PruneDB: an engine's
// ledger store embeds it.
type RunPruner struct{ DB PruneDB }

// Prune implements ledger.Pruner: the job's runs (ticks and
// submissions) finished before p.Before are removed, oldest first, each
// with its items of every generation, its settle marks and its item
// pages, in chunks of at most PruneChunk records, its run record last,
// until p's limit of records is removed. A run cut short by the limit is
// removed further by the next call (More).
func (s RunPruner) Prune(ctx context.Context, p ledger.PruneParams) (ledger.PruneResult, error) {
	db := s.DB
	limit := p.Limit()
	var res ledger.PruneResult
	for res.Records < limit {
		r, ok, err := db.OldestFinished(ctx, p.Job, p.Before)
		if err != nil {
			return res, fmt.Errorf("prune %s: %w", p.Job, err)
		}
		if !ok {
			return res, nil
		}
		done, n, err := pruneRun(ctx, db, r, limit-res.Records)
		res.Records += n
		if err != nil {
			return res, err
		}
		if !done {
			res.More = true
			return res, nil
		}
		res.Runs++
	}
	res.More = true
	return res, nil
}

// pruneRun removes up to budget records of r with generations
// 1..r.Generation, its run record last; done reports that the run record
// is gone.
func pruneRun(ctx context.Context, db PruneDB, r FinishedRun, budget int) (done bool, n int, err error) {
	id := ledger.RunIDOf(r.Job, Time(r.Nominal), 0)
	for g := r.Generation; g >= 1; g-- {
		id.Generation = g
		run := id.String()
		for _, part := range runParts {
			for {
				if n >= budget {
					return false, n, nil
				}
				deleted, err := db.DeleteChunk(ctx, part, run, min(budget-n, PruneChunk)) // a re-run deletes what is left
				if err != nil {
					return false, n, fmt.Errorf("prune %s: %w", run, err)
				}
				n += deleted
				if deleted == 0 {
					break
				}
			}
		}
	}
	if n >= budget {
		return false, n, nil
	}
	if err := db.DeleteRun(ctx, r); err != nil {
		return false, n, fmt.Errorf("prune run %s (generation %d): %w", jobspec.TickKey(id), r.Generation, err)
	}
	return true, n + 1, nil
}
