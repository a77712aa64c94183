package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/sqlstore"
)

var _ ledger.SubmissionLister = (*LedgerStore)(nil)

// ListSubmissions implements ledger.SubmissionLister: the run records
// kept under "job+key" are those whose job starts with "job+"
// (starts_with compares bytes, whatever the database's collation).
func (s *LedgerStore) ListSubmissions(ctx context.Context, p ledger.ListSubmissionsParams) ([]ledger.Run, error) {
	limit := sqlstore.ListLimit(p.Limit)
	runs, err := queryAll(ctx, s.db, `SELECT `+sqlstore.RunColumns+` FROM baton_runs
		WHERE starts_with(job, $1) ORDER BY updated_at DESC, job LIMIT $2`, []any{p.Job + "+", limit},
		func(rows pgx.Rows) (ledger.Run, error) { return sqlstore.ScanRun(rows.Scan) })
	if err != nil {
		return nil, fmt.Errorf("list submissions of %s: %w", p.Job, translate(err))
	}
	return runs, nil
}
