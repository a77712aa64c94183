package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/sqlstore"
)

var _ ledger.Pruner = (*LedgerStore)(nil)

// pruneChunkSQL deletes up to $2 records of one part of run $1.
var pruneChunkSQL = map[sqlstore.RunPart]string{
	sqlstore.PartItems:     `DELETE FROM baton_items WHERE run = $1 AND asset IN (SELECT asset FROM baton_items WHERE run = $1 LIMIT $2)`,
	sqlstore.PartMarks:     `DELETE FROM baton_marks WHERE run = $1 AND (level, idx) IN (SELECT level, idx FROM baton_marks WHERE run = $1 LIMIT $2)`,
	sqlstore.PartItemPages: `DELETE FROM baton_item_pages WHERE run = $1 AND idx IN (SELECT idx FROM baton_item_pages WHERE run = $1 LIMIT $2)`,
}

// OldestFinished implements sqlstore.PruneDB.
func (d statements) OldestFinished(ctx context.Context, job string, before time.Time) (sqlstore.FinishedRun, bool, error) {
	var r sqlstore.FinishedRun
	err := d.db.queryRow(ctx, nil, `SELECT job, nominal, generation FROM baton_runs
		WHERE finished_at > 0 AND finished_at < $1 AND (job = $2 OR left(job, length($2) + 1) = $2 || '+')
		ORDER BY finished_at LIMIT 1`, toNanos(before), job).Scan(&r.Job, &r.Nominal, &r.Generation)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, false, nil
	}
	return r, err == nil, translate(err)
}

// DeleteChunk implements sqlstore.PruneDB.
func (d statements) DeleteChunk(ctx context.Context, part sqlstore.RunPart, run string, n int) (int, error) {
	tag, err := d.db.exec(ctx, nil, pruneChunkSQL[part], run, n)
	if err != nil {
		return 0, translate(err)
	}
	return int(tag.RowsAffected()), nil
}

// DeleteRun implements sqlstore.PruneDB.
func (d statements) DeleteRun(ctx context.Context, r sqlstore.FinishedRun) error {
	_, err := d.db.exec(ctx, nil, `DELETE FROM baton_runs WHERE job = $1 AND nominal = $2 AND generation = $3`, r.Job, r.Nominal, r.Generation)
	return translate(err)
}
