package postgres

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/internal/ledger"
)

var _ ledger.SubmissionLister = (*LedgerStore)(nil)

// ListSubmissions implements ledger.SubmissionLister: the run records
// kept under "job+key" are those whose job starts with "job+"
// (starts_with compares bytes, whatever the database's collation).
func (s *LedgerStore) ListSubmissions(ctx context.Context, p ledger.ListSubmissionsParams) ([]ledger.Run, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 20
	}
	rows, err := s.db.pool.Query(ctx, `SELECT `+ledgerRunColumns+` FROM baton_runs
		WHERE starts_with(job, $1) ORDER BY updated_at DESC, job LIMIT $2`, p.Job+"+", limit)
	if err != nil {
		return nil, fmt.Errorf("list submissions of %s: %w", p.Job, translate(err))
	}
	defer rows.Close()
	var runs []ledger.Run
	for rows.Next() {
		r, err := scanRun(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("list submissions of %s: %w", p.Job, translate(err))
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list submissions of %s: %w", p.Job, translate(err))
	}
	return runs, nil
}
