package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/sqlstore"
)

// LedgerStore is ledger.Store on the tables runs and items.
//
// Every transition is one conditional statement (UPDATE … WHERE …
// RETURNING, or INSERT … ON CONFLICT DO UPDATE … WHERE … RETURNING). When
// its condition fails no row comes back, and a read in the same
// all-or-nothing write finds the record that made it fail, which picks the
// sentinel and is returned with it. The item transitions of the consumer's
// path (Claim, Complete, Fail, Release, Extend) first run their statement alone,
// which is one write when it applies; only a refusal goes on to a read,
// and, unless that read finds a terminal record (which never changes), to
// the all-or-nothing write.
type LedgerStore struct {
	sqlstore.RunPruner // ledger.Pruner over statements: each chunk one write
	db                 *DB

	mu    sync.Mutex
	stmts [numLedgerStmts]*sql.Stmt // prepared on first use
}

var _ ledger.Store = (*LedgerStore)(nil)

// NewLedgerStore returns the ledger of db. Its statements are prepared on
// first use and live as long as db.
func NewLedgerStore(db *DB) *LedgerStore {
	return &LedgerStore{RunPruner: sqlstore.RunPruner{DB: statements{db}}, db: db}
}

// OpenRun implements ledger.Store.
func (s *LedgerStore) OpenRun(ctx context.Context, p ledger.OpenRunParams) (ledger.Run, ledger.OpenOutcome, error) {
	var (
		r   ledger.Run
		out ledger.OpenOutcome
		err error
	)
	job, nominal := ledger.TickOf(ledger.RunID{Job: p.Job, Nominal: p.Nominal, Submission: p.Submission})
	p.Job, p.Nominal = job, nominal
	args := []any{
		sql.Named("job", p.Job), sql.Named("nominal", toNanos(p.Nominal)),
		sql.Named("fence", p.Fence), sql.Named("now", toNanos(p.Now)), sql.Named("shards", max(p.Shards, 1)),
		sql.Named("digest", p.Digest), sql.Named("trace_id", p.TraceID),
	}
	txErr := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if p.Force {
			r, err = sqlstore.ScanRun(s.row(ctx, tx, ledgerForceRun, args...).Scan)
			out = ledger.Opened
			return err
		}
		r, err = sqlstore.ScanRun(s.row(ctx, tx, ledgerInsertRun, args...).Scan)
		if err == nil {
			out = ledger.Opened
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		r, err = sqlstore.ScanRun(s.row(ctx, tx, ledgerResumeRun, args...).Scan)
		if err == nil {
			out = ledger.Resumed
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if r, err = s.getRun(ctx, tx, p.Job, p.Nominal); err != nil {
			return err
		}
		if r.State != ledger.RunFanningOut {
			out = ledger.AlreadyFannedOut
			return nil
		}
		err = fmt.Errorf("fence %d is below the run's %d: %w", p.Fence, r.Fence, ledger.ErrConflict)
		return nil
	})
	tick := jobspec.TickKey(ledger.RunIDOf(p.Job, p.Nominal, 0))
	if txErr != nil {
		return ledger.Run{}, "", fmt.Errorf("open run %s: %w", tick, txErr)
	}
	if err != nil {
		return r, "", fmt.Errorf("open run %s: %w", tick, err)
	}
	return r, out, nil
}

// AdvanceRun implements ledger.Store.
func (s *LedgerStore) AdvanceRun(ctx context.Context, p ledger.AdvanceRunParams) (ledger.Run, error) {
	var r ledger.Run
	var err error
	txErr := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		job, nominal := ledger.TickOf(p.ID)
		r, err = sqlstore.ScanRun(s.row(ctx, tx, ledgerAdvanceRun,
			sql.Named("job", job), sql.Named("nominal", toNanos(nominal)),
			sql.Named("generation", p.ID.Generation), sql.Named("fence", p.Fence),
			sql.Named("cursor", p.Cursor), sql.Named("done", p.Done), sql.Named("now", toNanos(p.Now))).Scan)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if r, err = s.getRun(ctx, tx, job, nominal); err != nil {
			return err
		}
		err = fmt.Errorf("run %s is %s (fence %d, cursor %d): %w", r.ID, r.State, r.Fence, r.Cursor, ledger.ErrConflict)
		return nil
	})
	return r, ledgerResult("advance run", p.ID, txErr, err)
}

// FinishRun implements ledger.Store.
func (s *LedgerStore) FinishRun(ctx context.Context, p ledger.FinishRunParams) (ledger.Run, error) {
	var r ledger.Run
	var err error
	txErr := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		job, nominal := ledger.TickOf(p.ID)
		r, err = sqlstore.ScanRun(s.row(ctx, tx, ledgerFinishRun,
			sql.Named("job", job), sql.Named("nominal", toNanos(nominal)),
			sql.Named("generation", p.ID.Generation), sql.Named("succeeded", p.Succeeded),
			sql.Named("dead", p.Dead), sql.Named("cancelled", p.Cancelled), sql.Named("now", toNanos(p.Now))).Scan)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if r, err = s.getRun(ctx, tx, job, nominal); err != nil {
			return err
		}
		switch {
		case r.ID.Generation != p.ID.Generation:
			err = fmt.Errorf("the tick's run is %s: %w", r.ID, ledger.ErrConflict)
		case r.State.Finished():
			err = fmt.Errorf("run is %s: %w", r.State, ledger.ErrTerminal)
		default:
			err = fmt.Errorf("run is %s: %w", r.State, ledger.ErrConflict)
		}
		return nil
	})
	return r, ledgerResult("finish run", p.ID, txErr, err)
}

// GetRun implements ledger.Store.
func (s *LedgerStore) GetRun(ctx context.Context, job string, nominal time.Time) (ledger.Run, error) {
	err := s.prepare(ctx)
	var r ledger.Run
	if err == nil {
		r, err = s.getRun(ctx, nil, job, nominal)
	}
	if err != nil {
		return ledger.Run{}, fmt.Errorf("get run %s: %w", jobspec.TickKey(ledger.RunIDOf(job, nominal, 0)), err)
	}
	return r, nil
}

// ListRuns implements ledger.Store.
func (s *LedgerStore) ListRuns(ctx context.Context, p ledger.ListRunsParams) ([]ledger.Run, error) {
	limit, before := sqlstore.ListLimit(p.Limit), sqlstore.RunsBefore(p.Before)
	rows, err := s.db.sql.QueryContext(ctx, `
		SELECT `+sqlstore.RunColumns+` FROM runs
		WHERE job = :job AND nominal < :before
		ORDER BY nominal DESC LIMIT :limit`,
		sql.Named("job", p.Job), sql.Named("before", before), sql.Named("limit", limit))
	if err != nil {
		return nil, fmt.Errorf("list runs of %s: %w", p.Job, err)
	}
	defer rows.Close()
	var runs []ledger.Run
	for rows.Next() {
		r, err := sqlstore.ScanRun(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("list runs of %s: %w", p.Job, err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs of %s: %w", p.Job, err)
	}
	return runs, nil
}

// Claim implements ledger.Store.
func (s *LedgerStore) Claim(ctx context.Context, p ledger.ClaimParams) (ledger.Item, error) {
	args := []any{
		sql.Named("run", p.Key.Run.String()), sql.Named("asset", p.Key.Asset),
		sql.Named("owner", p.Owner), sql.Named("lease_until", toNanos(p.LeaseUntil)),
		sql.Named("fence", p.Fence), sql.Named("max_attempts", p.MaxAttempts),
		sql.Named("skew", int64(p.Skew)), sql.Named("now", toNanos(p.Now)),
	}
	// verdict reads the claim statement's outcome: done, with the item and
	// the sentinel if any, unless its condition failed (no row).
	verdict := func(it ledger.Item, err error) (ledger.Item, bool, error) {
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return it, false, nil
		case err == nil && it.State == ledger.ItemDead:
			err = fmt.Errorf("%s after attempt %d: %w", it.Error, it.Attempt, ledger.ErrTerminal)
		}
		return it, true, err
	}
	if it, done, err := verdict(s.autocommit(ctx, ledgerClaim, p.Key.Run, args...)); done {
		return it, ledgerResult("claim", p.Key, nil, err)
	}
	if it, err := s.terminal(ctx, p.Key); err != nil {
		return it, ledgerResult("claim", p.Key, nil, err)
	}
	var it ledger.Item
	var err error
	txErr := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var done bool
		if it, done, err = verdict(sqlstore.ScanItem(s.row(ctx, tx, ledgerClaim, args...).Scan, p.Key.Run)); done {
			if err != nil && !errors.Is(err, ledger.ErrTerminal) {
				return err // a backend error
			}
			return nil // err is the verdict; a DEAD write commits
		}
		if it, err = s.getItem(ctx, tx, p.Key); err != nil {
			return err
		}
		switch {
		case it.State == ledger.ItemRunning:
			err = fmt.Errorf("held by %s (attempt %d) until %s: %w",
				it.Owner, it.Attempt, it.LeaseUntil.Format(time.RFC3339Nano), ledger.ErrHeld)
		case it.State.Terminal():
			err = fmt.Errorf("item is %s: %w", it.State, ledger.ErrTerminal)
		default:
			err = fmt.Errorf("item is %s: %w", it.State, ledger.ErrConflict)
		}
		return nil
	})
	return it, ledgerResult("claim", p.Key, txErr, err)
}

// Complete implements ledger.Store.
func (s *LedgerStore) Complete(ctx context.Context, p ledger.CompleteParams) (ledger.Item, error) {
	return s.holderWrite(ctx, "complete", ledgerComplete, p.Key, p.Owner, p.Attempt,
		sql.Named("result", p.Result), sql.Named("now", toNanos(p.Now)))
}

// Fail implements ledger.Store.
func (s *LedgerStore) Fail(ctx context.Context, p ledger.FailParams) (ledger.Item, error) {
	// The condition pins attempt to p.Attempt, so the verdict is known here.
	state, finished := ledger.ItemFailed, int64(0)
	if p.Permanent || (p.MaxAttempts > 0 && p.Attempt >= p.MaxAttempts) {
		state, finished = ledger.ItemDead, toNanos(p.Now)
	}
	return s.holderWrite(ctx, "fail", ledgerFail, p.Key, p.Owner, p.Attempt,
		sql.Named("state", string(state)), sql.Named("reason", p.Reason),
		sql.Named("finished_at", finished), sql.Named("now", toNanos(p.Now)))
}

// Release implements ledger.Store.
func (s *LedgerStore) Release(ctx context.Context, p ledger.ReleaseParams) (ledger.Item, error) {
	return s.holderWrite(ctx, "release", ledgerRelease, p.Key, p.Owner, p.Attempt,
		sql.Named("now", toNanos(p.Now)))
}

// Extend implements ledger.Store: the Release statement's condition, with
// the new expiry.
func (s *LedgerStore) Extend(ctx context.Context, p ledger.ExtendParams) (ledger.Item, error) {
	return s.holderWrite(ctx, "extend", ledgerExtend, p.Key, p.Owner, p.Attempt,
		sql.Named("lease_until", toNanos(p.LeaseUntil)), sql.Named("now", toNanos(p.Now)))
}

// holderWrite runs stmt, whose condition is the one Complete, Fail,
// Release and Extend share: the item is RUNNING under owner and attempt.
func (s *LedgerStore) holderWrite(ctx context.Context, op string, stmt ledgerStmt, key ledger.ItemKey, owner string, attempt int, args ...any) (ledger.Item, error) {
	args = append(args,
		sql.Named("run", key.Run.String()), sql.Named("asset", key.Asset),
		sql.Named("owner", owner), sql.Named("attempt", attempt))
	if it, err := s.autocommit(ctx, stmt, key.Run, args...); !errors.Is(err, sql.ErrNoRows) {
		return it, ledgerResult(op, key, nil, err)
	}
	if it, err := s.terminal(ctx, key); err != nil {
		return it, ledgerResult(op, key, nil, err)
	}
	var it ledger.Item
	var err error
	txErr := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		it, err = sqlstore.ScanItem(s.row(ctx, tx, stmt, args...).Scan, key.Run)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		it, err = s.getItem(ctx, tx, key)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			return nil // err is the sentinel
		case err != nil:
			return err
		case it.State.Terminal():
			err = fmt.Errorf("item is %s: %w", it.State, ledger.ErrTerminal)
		default:
			err = fmt.Errorf("caller %s#%d, item %s by %s#%d: %w",
				owner, attempt, it.State, it.Owner, it.Attempt, ledger.ErrConflict)
		}
		return nil
	})
	return it, ledgerResult(op, key, txErr, err)
}

// Cancel implements ledger.Store.
func (s *LedgerStore) Cancel(ctx context.Context, p ledger.CancelParams) (ledger.Item, error) {
	var it ledger.Item
	var err error
	txErr := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		it, err = sqlstore.ScanItem(s.row(ctx, tx, ledgerCancel,
			sql.Named("run", p.Key.Run.String()), sql.Named("asset", p.Key.Asset),
			sql.Named("reason", p.Reason), sql.Named("now", toNanos(p.Now))).Scan, p.Key.Run)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if it, err = s.getItem(ctx, tx, p.Key); err != nil {
			return err
		}
		if it.State.Terminal() {
			err = fmt.Errorf("item is %s: %w", it.State, ledger.ErrTerminal)
		} else {
			err = fmt.Errorf("item is %s: %w", it.State, ledger.ErrConflict)
		}
		return nil
	})
	return it, ledgerResult("cancel", p.Key, txErr, err)
}

// GetItem implements ledger.Store.
func (s *LedgerStore) GetItem(ctx context.Context, key ledger.ItemKey) (ledger.Item, error) {
	err := s.prepare(ctx)
	var it ledger.Item
	if err == nil {
		it, err = s.getItem(ctx, nil, key)
	}
	if err != nil {
		return ledger.Item{}, fmt.Errorf("get item %s: %w", key, err)
	}
	return it, nil
}

// ListItems implements ledger.Store.
func (s *LedgerStore) ListItems(ctx context.Context, run ledger.RunID) ([]ledger.Item, error) {
	rows, err := s.db.sql.QueryContext(ctx,
		`SELECT `+sqlstore.ItemColumns+` FROM items WHERE run = :run ORDER BY asset`,
		sql.Named("run", run.String()))
	if err != nil {
		return nil, fmt.Errorf("list items of %s: %w", run, err)
	}
	defer rows.Close()
	var items []ledger.Item
	for rows.Next() {
		it, err := sqlstore.ScanItem(rows.Scan, run)
		if err != nil {
			return nil, fmt.Errorf("list items of %s: %w", run, err)
		}
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list items of %s: %w", run, err)
	}
	return items, nil
}

// getRun reads the tick's record in tx (nil: none); ledger.ErrNotFound
// when there is none.
func (s *LedgerStore) getRun(ctx context.Context, tx *sql.Tx, job string, nominal time.Time) (ledger.Run, error) {
	r, err := sqlstore.ScanRun(s.row(ctx, tx, ledgerGetRun, sql.Named("job", job), sql.Named("nominal", toNanos(nominal))).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Run{}, ledger.ErrNotFound
	}
	return r, err
}

// getItem reads the item's record in tx (nil: none); ledger.ErrNotFound
// when there is none.
func (s *LedgerStore) getItem(ctx context.Context, tx *sql.Tx, key ledger.ItemKey) (ledger.Item, error) {
	it, err := sqlstore.ScanItem(s.row(ctx, tx, ledgerGetItem, sql.Named("run", key.Run.String()), sql.Named("asset", key.Asset)).Scan, key.Run)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Item{}, ledger.ErrNotFound
	}
	return it, err
}

// autocommit runs the item transition id as one write of its own: the
// fast path of Claim, Complete, Fail and Release, one statement when the
// condition holds. It returns sql.ErrNoRows when the condition failed; the
// caller then runs the transition again in a transaction that also reads
// the record that refused it.
func (s *LedgerStore) autocommit(ctx context.Context, id ledgerStmt, run ledger.RunID, args ...any) (ledger.Item, error) {
	if err := s.prepare(ctx); err != nil {
		return ledger.Item{}, err
	}
	var it ledger.Item
	var refused bool
	err := s.db.write(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		it, err = sqlstore.ScanItem(s.row(ctx, tx, id, args...).Scan, run)
		if errors.Is(err, sql.ErrNoRows) {
			refused, err = true, nil // an outcome, not a failed write
		}
		return err
	})
	if err == nil && refused {
		err = sql.ErrNoRows
	}
	return it, err
}

// terminal reads the item after a refused autocommit transition: a
// terminal record never changes, so its refusal is final without a
// transaction, and terminal returns it with ErrTerminal. It returns a nil
// error otherwise (the caller goes on to the transaction), and a backend
// error as is.
func (s *LedgerStore) terminal(ctx context.Context, key ledger.ItemKey) (ledger.Item, error) {
	it, err := s.getItem(ctx, nil, key)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return ledger.Item{}, nil
	case err != nil:
		return it, err
	case it.State.Terminal():
		return it, fmt.Errorf("item is %s: %w", it.State, ledger.ErrTerminal)
	}
	return ledger.Item{}, nil
}

// inTx runs fn as one all-or-nothing write (see DB.writeAtomic), applied
// when fn returns nil. fn returns backend errors only: a sentinel that a
// transition picks is one of its results, and what was written with it
// (Claim's DEAD) is committed.
func (s *LedgerStore) inTx(ctx context.Context, fn writeFunc) error {
	// Prepare first: the writer's transaction holds its connection.
	if err := s.prepare(ctx); err != nil {
		return err
	}
	return s.db.writeAtomic(ctx, fn)
}

// row runs the prepared statement id in tx, or outside any write (a read)
// when tx is nil.
// Callers have called prepare successfully.
func (s *LedgerStore) row(ctx context.Context, tx *sql.Tx, id ledgerStmt, args ...any) *sql.Row {
	st := s.stmts[id]
	if tx != nil {
		st = tx.StmtContext(ctx, st)
	}
	return st.QueryRowContext(ctx, args...)
}

// prepare prepares every statement, once.
func (s *LedgerStore) prepare(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stmts[0] != nil {
		return nil
	}
	var stmts [numLedgerStmts]*sql.Stmt
	for id, q := range ledgerQueries {
		st, err := s.db.sql.PrepareContext(ctx, q)
		if err != nil {
			for _, st := range stmts[:id] {
				st.Close()
			}
			return fmt.Errorf("prepare ledger statement %d: %w", id, err)
		}
		stmts[id] = st
	}
	s.stmts = stmts
	return nil
}

// ledgerResult wraps the outcome of a transition: a backend error, or the
// sentinel the transition picked (nil: success).
func ledgerResult(op string, subject fmt.Stringer, txErr, err error) error {
	switch {
	case txErr != nil:
		return fmt.Errorf("%s %s: %w", op, subject, txErr)
	case err != nil:
		return fmt.Errorf("%s %s: %w", op, subject, err)
	}
	return nil
}

// ledgerStmt names one of the prepared statements.
type ledgerStmt int

const (
	ledgerInsertRun ledgerStmt = iota
	ledgerResumeRun
	ledgerForceRun
	ledgerAdvanceRun
	ledgerFinishRun
	ledgerGetRun
	ledgerClaim
	ledgerComplete
	ledgerFail
	ledgerRelease
	ledgerCancel
	ledgerGetItem
	ledgerExtend
	ledgerNoteWait
	numLedgerStmts
)

// ledgerClaimExhausted is Claim's condition for DEAD instead of another attempt.
// SET expressions all read the row as it was before the statement.
const ledgerClaimExhausted = `(:max_attempts > 0 AND attempt >= :max_attempts)`

// ledgerQueries are the statements. Each write is one conditional
// statement that returns the record it wrote, or no row when its
// condition failed.
var ledgerQueries = [numLedgerStmts]string{
	// Opened: the tick has no record.
	ledgerInsertRun: `
		INSERT INTO runs (job, nominal, generation, state, fence, open_fence, shards, opened_at, updated_at, digest, trace_id)
		VALUES (:job, :nominal, 1, 'fanning_out', :fence, :fence, :shards, :now, :now, :digest, :trace_id)
		ON CONFLICT (job, nominal) DO NOTHING
		RETURNING ` + sqlstore.RunColumns,

	// Resumed: fanning out, and no newer coordinator has taken it.
	ledgerResumeRun: `
		UPDATE runs SET fence = :fence, updated_at = :now
		WHERE job = :job AND nominal = :nominal AND state = 'fanning_out' AND fence <= :fence
		RETURNING ` + sqlstore.RunColumns,

	// Opened, forced: generation 1, or the next one from scratch.
	ledgerForceRun: `
		INSERT INTO runs (job, nominal, generation, state, fence, open_fence, shards, opened_at, updated_at, digest, trace_id)
		VALUES (:job, :nominal, 1, 'fanning_out', :fence, :fence, :shards, :now, :now, :digest, :trace_id)
		ON CONFLICT (job, nominal) DO UPDATE SET
			generation = generation + 1, state = 'fanning_out', cursor = 0, total = 0,
			fence = :fence, open_fence = :fence, shards = :shards, opened_at = :now, updated_at = :now, finished_at = 0, digest = :digest, trace_id = :trace_id,
			succeeded = 0, dead = 0, cancelled = 0
		RETURNING ` + sqlstore.RunColumns,

	ledgerAdvanceRun: `
		UPDATE runs SET
			cursor = :cursor, fence = :fence, updated_at = :now,
			state = CASE WHEN :done THEN 'fanned_out' ELSE state END,
			total = CASE WHEN :done THEN :cursor ELSE total END
		WHERE job = :job AND nominal = :nominal AND generation = :generation
			AND state = 'fanning_out' AND fence <= :fence AND cursor <= :cursor
		RETURNING ` + sqlstore.RunColumns,

	ledgerFinishRun: `
		UPDATE runs SET
			state = CASE WHEN :dead + :cancelled = 0 THEN 'complete' ELSE 'partial' END,
			succeeded = :succeeded, dead = :dead, cancelled = :cancelled,
			finished_at = :now, updated_at = :now
		WHERE job = :job AND nominal = :nominal AND generation = :generation AND state = 'fanned_out'
		RETURNING ` + sqlstore.RunColumns,

	ledgerGetRun: `SELECT ` + sqlstore.RunColumns + ` FROM runs WHERE job = :job AND nominal = :nominal`,

	// absent → RUNNING attempt 1; FAILED or expired RUNNING → RUNNING
	// attempt+1, or DEAD when the attempts are exhausted.
	ledgerClaim: `
		INSERT INTO items (run, asset, state, owner, attempt, lease_until, fence, created_at, started_at, updated_at)
		VALUES (:run, :asset, 'RUNNING', :owner, 1, :lease_until, :fence, :now, :now, :now)
		ON CONFLICT (run, asset) DO UPDATE SET
			state       = CASE WHEN ` + ledgerClaimExhausted + ` THEN 'DEAD' ELSE 'RUNNING' END,
			owner       = CASE WHEN ` + ledgerClaimExhausted + ` THEN owner ELSE :owner END,
			attempt     = CASE WHEN ` + ledgerClaimExhausted + ` THEN attempt ELSE attempt + 1 END,
			lease_until = CASE WHEN ` + ledgerClaimExhausted + ` THEN lease_until ELSE :lease_until END,
			fence       = CASE WHEN ` + ledgerClaimExhausted + ` THEN fence ELSE :fence END,
			error       = CASE WHEN ` + ledgerClaimExhausted + ` THEN 'attempts exhausted' ELSE error END,
			started_at  = CASE WHEN ` + ledgerClaimExhausted + ` THEN started_at ELSE :now END,
			finished_at = CASE WHEN ` + ledgerClaimExhausted + ` THEN :now ELSE finished_at END,
			updated_at  = :now
		WHERE state = 'FAILED' OR (state = 'RUNNING' AND lease_until + :skew <= :now)
		RETURNING ` + sqlstore.ItemColumns,

	ledgerComplete: `
		UPDATE items SET state = 'SUCCEEDED', result = :result, finished_at = :now, updated_at = :now
		WHERE run = :run AND asset = :asset AND state = 'RUNNING' AND owner = :owner AND attempt = :attempt
		RETURNING ` + sqlstore.ItemColumns,

	ledgerFail: `
		UPDATE items SET state = :state, error = :reason, finished_at = :finished_at, updated_at = :now
		WHERE run = :run AND asset = :asset AND state = 'RUNNING' AND owner = :owner AND attempt = :attempt
		RETURNING ` + sqlstore.ItemColumns,

	ledgerRelease: `
		UPDATE items SET lease_until = :now, updated_at = :now
		WHERE run = :run AND asset = :asset AND state = 'RUNNING' AND owner = :owner AND attempt = :attempt
		RETURNING ` + sqlstore.ItemColumns,

	ledgerCancel: `
		INSERT INTO items (run, asset, state, error, created_at, finished_at, updated_at)
		VALUES (:run, :asset, 'CANCELLED', :reason, :now, :now, :now)
		ON CONFLICT (run, asset) DO UPDATE SET
			state = 'CANCELLED', error = :reason, finished_at = :now, updated_at = :now
		WHERE state IN ('RUNNING', 'FAILED')
		RETURNING ` + sqlstore.ItemColumns,

	ledgerGetItem: `SELECT ` + sqlstore.ItemColumns + ` FROM items WHERE run = :run AND asset = :asset`,

	ledgerExtend: `
		UPDATE items SET lease_until = :lease_until, updated_at = :now
		WHERE run = :run AND asset = :asset AND state = 'RUNNING' AND owner = :owner AND attempt = :attempt
		RETURNING ` + sqlstore.ItemColumns,

	// absent (unclaimed only) → FAILED attempt 0 with the wait; FAILED
	// (at :attempt unless unclaimed) → the wait noted at its attempt.
	ledgerNoteWait: `
		INSERT INTO items (run, asset, state, attempt, created_at, updated_at, wait_at, wait_limit, wait_key, wait_attempt)
		SELECT :run, :asset, 'FAILED', 0, :now, :now, :wait_at, :wait_limit, :wait_key, 0
		WHERE :unclaimed OR EXISTS (SELECT 1 FROM items WHERE run = :run AND asset = :asset)
		ON CONFLICT (run, asset) DO UPDATE SET
			wait_at = :wait_at, wait_limit = :wait_limit, wait_key = :wait_key, wait_attempt = attempt, updated_at = :now
		WHERE state = 'FAILED' AND (:unclaimed OR attempt = :attempt)
		RETURNING ` + sqlstore.ItemColumns,
}
