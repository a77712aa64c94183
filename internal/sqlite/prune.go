package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/sqlstore"
)

var _ ledger.Pruner = (*LedgerStore)(nil)

// pruneChunkSQL deletes up to :n records of one part of :run.
var pruneChunkSQL = map[sqlstore.RunPart]string{
	sqlstore.PartItems:     `DELETE FROM items WHERE run = :run AND asset IN (SELECT asset FROM items WHERE run = :run LIMIT :n)`,
	sqlstore.PartMarks:     `DELETE FROM marks WHERE run = :run AND (level, idx) IN (SELECT level, idx FROM marks WHERE run = :run LIMIT :n)`,
	sqlstore.PartItemPages: `DELETE FROM item_pages WHERE run = :run AND idx IN (SELECT idx FROM item_pages WHERE run = :run LIMIT :n)`,
}

// OldestFinished implements sqlstore.PruneDB.
func (d statements) OldestFinished(ctx context.Context, job string, before time.Time) (sqlstore.FinishedRun, bool, error) {
	var r sqlstore.FinishedRun
	err := d.db.sql.QueryRowContext(ctx, `
		SELECT job, nominal, generation FROM runs INDEXED BY runs_finished
		WHERE finished_at > 0 AND finished_at < :before AND (job = :job OR substr(job, 1, length(:job) + 1) = :job || '+')
		ORDER BY finished_at LIMIT 1`,
		sql.Named("before", toNanos(before)), sql.Named("job", job)).Scan(&r.Job, &r.Nominal, &r.Generation)
	if err == sql.ErrNoRows {
		return r, false, nil
	}
	return r, err == nil, err
}

// DeleteChunk implements sqlstore.PruneDB.
func (d statements) DeleteChunk(ctx context.Context, part sqlstore.RunPart, run string, n int) (int, error) {
	var deleted int64
	err := d.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, pruneChunkSQL[part], sql.Named("run", run), sql.Named("n", n))
		if err != nil {
			return err
		}
		deleted, err = r.RowsAffected()
		return err
	})
	return int(deleted), err
}

// DeleteRun implements sqlstore.PruneDB.
func (d statements) DeleteRun(ctx context.Context, r sqlstore.FinishedRun) error {
	return d.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE job = :job AND nominal = :nominal AND generation = :gen`,
			sql.Named("job", r.Job), sql.Named("nominal", r.Nominal), sql.Named("gen", r.Generation))
		return err
	})
}
