package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
)

var _ ledger.Pruner = (*LedgerStore)(nil)

// Prune implements ledger.Pruner as the embedded store does: the job's
// runs (ticks and submissions) finished before p.Before are removed, each
// with its items of every generation, its settle marks and its item
// pages, in chunks of at most 1,000 rows, its run record last, until
// p.MaxRecords records are removed.
func (s *LedgerStore) Prune(ctx context.Context, p ledger.PruneParams) (ledger.PruneResult, error) {
	limit := p.Limit()
	var res ledger.PruneResult
	for res.Records < limit {
		var job string
		var nominal int64
		var gen int
		err := s.db.queryRow(ctx, nil, `SELECT job, nominal, generation FROM baton_runs
			WHERE finished_at > 0 AND finished_at < $1 AND (job = $2 OR left(job, length($2) + 1) = $2 || '+')
			ORDER BY finished_at LIMIT 1`, toNanos(p.Before), p.Job).Scan(&job, &nominal, &gen)
		if errors.Is(err, pgx.ErrNoRows) {
			return res, nil
		}
		if err != nil {
			return res, fmt.Errorf("prune %s: %w", p.Job, translate(err))
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

func (s *LedgerStore) pruneRun(ctx context.Context, job string, nominal int64, gen, budget int) (done bool, n int, err error) {
	id := ledger.RunIDOf(job, fromNanos(nominal), 0)
	for g := gen; g >= 1; g-- {
		id.Generation = g
		run := id.String()
		for _, q := range []string{
			`DELETE FROM baton_items WHERE run = $1 AND asset IN (SELECT asset FROM baton_items WHERE run = $1 LIMIT $2)`,
			`DELETE FROM baton_marks WHERE run = $1 AND (level, idx) IN (SELECT level, idx FROM baton_marks WHERE run = $1 LIMIT $2)`,
			`DELETE FROM baton_item_pages WHERE run = $1 AND idx IN (SELECT idx FROM baton_item_pages WHERE run = $1 LIMIT $2)`,
		} {
			for {
				if n >= budget {
					return false, n, nil
				}
				tag, err := s.db.exec(ctx, nil, q, run, min(budget-n, 1000)) // deletes: a re-run deletes what is left
				if err != nil {
					return false, n, fmt.Errorf("prune %s: %w", run, translate(err))
				}
				n += int(tag.RowsAffected())
				if tag.RowsAffected() == 0 {
					break
				}
			}
		}
	}
	if n >= budget {
		return false, n, nil
	}
	if _, err := s.db.exec(ctx, nil, `DELETE FROM baton_runs WHERE job = $1 AND nominal = $2 AND generation = $3`, job, nominal, gen); err != nil {
		return false, n, fmt.Errorf("prune run %s: %w", jobspec.TickKey(id), translate(err))
	}
	return true, n + 1, nil
}
