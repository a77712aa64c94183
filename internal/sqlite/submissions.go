package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/sqlstore"
)

var _ ledger.SubmissionLister = (*LedgerStore)(nil)

// ListSubmissions implements ledger.SubmissionLister: the run records
// kept under "job+key" are the primary key's range ["job+", "job,")
// (',' follows '+'), read from the index and sorted by update time.
func (s *LedgerStore) ListSubmissions(ctx context.Context, p ledger.ListSubmissionsParams) ([]ledger.Run, error) {
	limit := sqlstore.ListLimit(p.Limit)
	rows, err := s.db.sql.QueryContext(ctx, `
		SELECT `+sqlstore.RunColumns+` FROM runs
		WHERE job >= :lo AND job < :hi
		ORDER BY updated_at DESC, job LIMIT :limit`,
		sql.Named("lo", p.Job+"+"), sql.Named("hi", p.Job+","), sql.Named("limit", limit))
	if err != nil {
		return nil, fmt.Errorf("list submissions of %s: %w", p.Job, err)
	}
	defer rows.Close()
	var runs []ledger.Run
	for rows.Next() {
		r, err := sqlstore.ScanRun(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("list submissions of %s: %w", p.Job, err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list submissions of %s: %w", p.Job, err)
	}
	return runs, nil
}
