package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
)

var _ ledger.Pruner = (*LedgerStore)(nil)

// Prune implements ledger.Pruner: the job's runs (ticks and submissions)
// finished before p.Before are removed, each with its items of every
// generation, its settle marks and its item pages, in chunks, its run
// record last, until p.MaxRecords records are removed. Each chunk is one
// write transaction.
func (s *LedgerStore) Prune(ctx context.Context, p ledger.PruneParams) (ledger.PruneResult, error) {
	limit := p.Limit()
	var res ledger.PruneResult
	for res.Records < limit {
		var job string
		var nominal int64
		var gen int
		err := s.db.sql.QueryRowContext(ctx, `
			SELECT job, nominal, generation FROM runs INDEXED BY runs_finished
			WHERE finished_at > 0 AND finished_at < :before AND (job = :job OR substr(job, 1, length(:job) + 1) = :job || '+')
			ORDER BY finished_at LIMIT 1`,
			sql.Named("before", toNanos(p.Before)), sql.Named("job", p.Job)).Scan(&job, &nominal, &gen)
		if err == sql.ErrNoRows {
			return res, nil
		}
		if err != nil {
			return res, fmt.Errorf("prune %s: %w", p.Job, err)
		}
		done, n, err := s.pruneRun(ctx, job, nominal, gen, limit-res.Records)
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

// pruneRun removes up to budget records of the run kept under (job,
// nominal) with generations 1..gen, its run record last; done reports
// that the run record is gone.
func (s *LedgerStore) pruneRun(ctx context.Context, job string, nominal int64, gen, budget int) (done bool, n int, err error) {
	id := ledger.RunIDOf(job, fromNanos(nominal), 0)
	for g := gen; g >= 1; g-- {
		id.Generation = g
		run := id.String()
		for _, q := range []string{
			`DELETE FROM items WHERE run = :run AND asset IN (SELECT asset FROM items WHERE run = :run LIMIT :n)`,
			`DELETE FROM marks WHERE run = :run AND (level, idx) IN (SELECT level, idx FROM marks WHERE run = :run LIMIT :n)`,
			`DELETE FROM item_pages WHERE run = :run AND idx IN (SELECT idx FROM item_pages WHERE run = :run LIMIT :n)`,
		} {
			for {
				if n >= budget {
					return false, n, nil
				}
				var deleted int64
				err := s.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
					r, err := tx.ExecContext(ctx, q, sql.Named("run", run), sql.Named("n", min(budget-n, 1000)))
					if err != nil {
						return err
					}
					deleted, err = r.RowsAffected()
					return err
				})
				if err != nil {
					return false, n, fmt.Errorf("prune %s: %w", run, err)
				}
				n += int(deleted)
				if deleted == 0 {
					break
				}
			}
		}
	}
	if n >= budget {
		return false, n, nil
	}
	err = s.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE job = :job AND nominal = :nominal AND generation = :gen`,
			sql.Named("job", job), sql.Named("nominal", nominal), sql.Named("gen", gen))
		return err
	})
	if err != nil {
		return false, n, fmt.Errorf("prune run %s (generation %s): %w", jobspec.TickKey(id), strconv.Itoa(gen), err)
	}
	return true, n + 1, nil
}
