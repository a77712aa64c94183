package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/sqlstore"
)

// LedgerStore is ledger.Store on the tables baton_runs and baton_items.
//
// Every transition is one conditional statement (UPDATE … WHERE …
// RETURNING, or INSERT … ON CONFLICT DO UPDATE … WHERE … RETURNING), run
// alone first: one round trip when it applies. When its condition fails no
// row comes back; the transition then sends, in one batch (one round trip,
// one implicit transaction), a read of the record FOR UPDATE and the
// statement again. The lock holds the record still between the two, so a
// statement refused again was refused by the very record read, which picks
// the sentinel and is returned with it; one applied this time (the record
// changed in between) is the transition's result.
type LedgerStore struct {
	sqlstore.RunPruner // ledger.Pruner over statements
	db                 *DB
}

var _ ledger.Store = (*LedgerStore)(nil)

// NewLedgerStore returns the ledger of db.
func NewLedgerStore(db *DB) *LedgerStore {
	return &LedgerStore{RunPruner: sqlstore.RunPruner{DB: statements{db}}, db: db}
}

// OpenRun implements ledger.Store.
func (s *LedgerStore) OpenRun(ctx context.Context, p ledger.OpenRunParams) (ledger.Run, ledger.OpenOutcome, error) {
	p.Job, p.Nominal = ledger.TickOf(ledger.RunID{Job: p.Job, Nominal: p.Nominal, Submission: p.Submission})
	tick := jobspec.TickKey(ledger.RunIDOf(p.Job, p.Nominal, 0))
	args := pgx.NamedArgs{"job": p.Job, "nominal": toNanos(p.Nominal), "fence": p.Fence, "now": toNanos(p.Now), "shards": max(p.Shards, 1), "digest": p.Digest, "trace_id": p.TraceID}
	// This very open, applied by an attempt whose answer was lost: the
	// record holds its fence as the opening one and its Now as the opening
	// time (a fence is taken once per lease acquisition).
	mine := func(r ledger.Run) bool {
		return r.OpenFence == p.Fence && sqlstore.SameTime(r.OpenedAt, p.Now) && r.Cursor == 0
	}
	var a attempts
	if p.Force {
		// A forced open re-run would open yet another generation: it is
		// sent once, and after an unknown outcome its guarded variant is
		// sent instead, which refuses to replace the open it finds to be
		// this one's (mine); the record read then is this open's.
		r, err := sqlstore.ScanRun(s.db.queryRow(ctx, &attempts{sendOnce: true}, ledgerForceRun.sql, ledgerForceRun.args(args)...).Scan)
		if _, sent := transient(err); sent {
			r, err = sqlstore.ScanRun(s.db.queryRow(ctx, nil, ledgerForceRunAgain.sql, ledgerForceRunAgain.args(args)...).Scan)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			if r, err = s.GetRun(ctx, p.Job, p.Nominal); err == nil && !mine(r) {
				err = fmt.Errorf("forced open refused by run %s: %w", r.ID, ledger.ErrConflict)
			}
			if err != nil {
				return ledger.Run{}, "", fmt.Errorf("open run %s: %w", tick, err)
			}
		}
		if err != nil {
			return ledger.Run{}, "", fmt.Errorf("open run %s: %w", tick, translate(err))
		}
		return r, ledger.Opened, nil
	}
	r, err := sqlstore.ScanRun(s.db.queryRow(ctx, &a, ledgerInsertRun.sql, ledgerInsertRun.args(args)...).Scan)
	if err == nil {
		return r, ledger.Opened, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return ledger.Run{}, "", fmt.Errorf("open run %s: %w", tick, translate(err))
	}
	// The record exists (records are never deleted): resume it, or read
	// what refused the resume.
	cur, resumed, wrote, err := s.lockedRun(ctx, &a, p.Job, p.Nominal, ledgerResumeRun, args)
	switch {
	case err != nil:
		return ledger.Run{}, "", fmt.Errorf("open run %s: %w", tick, err)
	case wrote && a.unsure && mine(resumed):
		// The insert re-run after its own first run applied: the resume
		// that followed found this open, not an earlier one.
		return resumed, ledger.Opened, nil
	case wrote:
		return resumed, ledger.Resumed, nil
	case cur == nil:
		return ledger.Run{}, "", fmt.Errorf("open run %s: the record vanished: %w", tick, ledger.ErrNotFound)
	case cur.State != ledger.RunFanningOut:
		return *cur, ledger.AlreadyFannedOut, nil
	}
	return *cur, "", fmt.Errorf("open run %s: fence %d is below the run's %d: %w", tick, p.Fence, cur.Fence, ledger.ErrConflict)
}

// AdvanceRun implements ledger.Store.
func (s *LedgerStore) AdvanceRun(ctx context.Context, p ledger.AdvanceRunParams) (ledger.Run, error) {
	args := pgx.NamedArgs{
		"job": tickJob(p.ID), "nominal": toNanos(tickNominal(p.ID)), "generation": p.ID.Generation,
		"fence": p.Fence, "cursor": p.Cursor, "done": p.Done, "now": toNanos(p.Now),
	}
	// A re-run applies again to the same effect, unless the first run
	// ended the fan-out (Done): the record then holds its fence, cursor
	// and Now.
	mine := func(cur ledger.Run) bool {
		return cur.ID.Generation == p.ID.Generation && cur.Fence == p.Fence && cur.Cursor == p.Cursor &&
			sqlstore.SameTime(cur.UpdatedAt, p.Now) && (cur.State == ledger.RunFanningOut) != p.Done
	}
	r, err := s.runWrite(ctx, p.ID, ledgerAdvanceRun, args, mine, func(cur ledger.Run) error {
		return fmt.Errorf("run %s is %s (fence %d, cursor %d): %w", cur.ID, cur.State, cur.Fence, cur.Cursor, ledger.ErrConflict)
	})
	return r, wrapLedger("advance run", p.ID, err)
}

// FinishRun implements ledger.Store.
func (s *LedgerStore) FinishRun(ctx context.Context, p ledger.FinishRunParams) (ledger.Run, error) {
	args := pgx.NamedArgs{
		"job": tickJob(p.ID), "nominal": toNanos(tickNominal(p.ID)), "generation": p.ID.Generation,
		"succeeded": p.Succeeded, "dead": p.Dead, "cancelled": p.Cancelled, "now": toNanos(p.Now),
	}
	// A re-run after the first applied finds the run finished with its
	// counts at its Now.
	mine := func(cur ledger.Run) bool {
		return cur.ID.Generation == p.ID.Generation && cur.State.Finished() && sqlstore.SameTime(cur.FinishedAt, p.Now) &&
			cur.Succeeded == p.Succeeded && cur.Dead == p.Dead && cur.Cancelled == p.Cancelled
	}
	r, err := s.runWrite(ctx, p.ID, ledgerFinishRun, args, mine, func(cur ledger.Run) error {
		switch {
		case cur.ID.Generation != p.ID.Generation:
			return fmt.Errorf("the tick's run is %s: %w", cur.ID, ledger.ErrConflict)
		case cur.State.Finished():
			return fmt.Errorf("run is %s: %w", cur.State, ledger.ErrTerminal)
		}
		return fmt.Errorf("run is %s: %w", cur.State, ledger.ErrConflict)
	})
	return r, wrapLedger("finish run", p.ID, err)
}

// runWrite runs a conditional statement on the run record of id; when
// refused, refusal picks the sentinel from the record that refused it.
// After a connection lost with the statement in flight, the statement is
// sent again (attempts): a refusal by a record that mine recognises as
// the statement's own write is its success.
func (s *LedgerStore) runWrite(ctx context.Context, id ledger.RunID, stmt namedSQL, args pgx.NamedArgs, mine func(ledger.Run) bool, refusal func(ledger.Run) error) (ledger.Run, error) {
	var a attempts
	r, err := sqlstore.ScanRun(s.db.queryRow(ctx, &a, stmt.sql, stmt.args(args)...).Scan)
	if err == nil {
		return r, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return ledger.Run{}, translate(err)
	}
	cur, wrote, ok, err := s.lockedRun(ctx, &a, tickJob(id), tickNominal(id), stmt, args)
	switch {
	case err != nil:
		return ledger.Run{}, err
	case ok:
		return wrote, nil
	case cur == nil:
		return ledger.Run{}, ledger.ErrNotFound
	case a.unsure && mine(*cur):
		return *cur, nil
	}
	return *cur, refusal(*cur)
}

// lockedRun sends, in one batch, a read of the run record FOR UPDATE and
// stmt: it returns the record read (nil when there is none) and, when stmt
// applied, the record it wrote.
func (s *LedgerStore) lockedRun(ctx context.Context, a *attempts, job string, nominal time.Time, stmt namedSQL, args pgx.NamedArgs) (cur *ledger.Run, wrote ledger.Run, ok bool, err error) {
	err = s.db.batch(ctx, a, func(b *pgx.Batch) {
		b.Queue(`SELECT `+sqlstore.RunColumns+` FROM baton_runs WHERE job = $1 AND nominal = $2 FOR UPDATE`, job, toNanos(nominal))
		b.Queue(stmt.sql, stmt.args(args)...)
	}, func(br pgx.BatchResults) error {
		cur, wrote, ok = nil, ledger.Run{}, false
		r, err := sqlstore.ScanRun(br.QueryRow().Scan)
		switch {
		case err == nil:
			cur = &r
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		wrote, err = sqlstore.ScanRun(br.QueryRow().Scan)
		switch {
		case err == nil:
			ok = true
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		return nil
	})
	if err != nil {
		return nil, ledger.Run{}, false, translate(err)
	}
	return cur, wrote, ok, nil
}

// GetRun implements ledger.Store.
func (s *LedgerStore) GetRun(ctx context.Context, job string, nominal time.Time) (ledger.Run, error) {
	r, err := sqlstore.ScanRun(s.db.queryRow(ctx, nil, `SELECT `+sqlstore.RunColumns+` FROM baton_runs WHERE job = $1 AND nominal = $2`, job, toNanos(nominal)).Scan)
	if errors.Is(err, pgx.ErrNoRows) {
		err = ledger.ErrNotFound
	}
	if err != nil {
		return ledger.Run{}, fmt.Errorf("get run %s: %w", jobspec.TickKey(ledger.RunIDOf(job, nominal, 0)), translate(err))
	}
	return r, nil
}

// ListRuns implements ledger.Store.
func (s *LedgerStore) ListRuns(ctx context.Context, p ledger.ListRunsParams) ([]ledger.Run, error) {
	limit, before := sqlstore.ListLimit(p.Limit), sqlstore.RunsBefore(p.Before)
	runs, err := queryAll(ctx, s.db, `SELECT `+sqlstore.RunColumns+` FROM baton_runs
		WHERE job = $1 AND nominal < $2 ORDER BY nominal DESC LIMIT $3`, []any{p.Job, before, limit},
		func(rows pgx.Rows) (ledger.Run, error) { return sqlstore.ScanRun(rows.Scan) })
	if err != nil {
		return nil, fmt.Errorf("list runs of %s: %w", p.Job, translate(err))
	}
	return runs, nil
}

// Claim implements ledger.Store.
func (s *LedgerStore) Claim(ctx context.Context, p ledger.ClaimParams) (ledger.Item, error) {
	w := claimWrite(p)
	it, err := s.itemWrite(ctx, w.key, w.stmt, w.args, w.mine, w.refusal)
	return w.finish(it, err)
}

// claimWrite is Claim's statement, with how a refusal and a re-run are
// read.
func claimWrite(p ledger.ClaimParams) itemWriteSpec {
	args := itemArgs(p.Key, pgx.NamedArgs{
		"owner": p.Owner, "lease_until": toNanos(p.LeaseUntil), "fence": p.Fence,
		"max_attempts": p.MaxAttempts, "skew": int64(p.Skew), "now": toNanos(p.Now),
	})
	return itemWriteSpec{
		op: "claim", key: p.Key, stmt: ledgerClaim, args: args,
		// A claim re-run after its first run applied is refused by that very
		// claim, RUNNING under this owner with this lease from this Now (an
		// owner claims an item once per Now): the claim's success. Any other
		// holder is a conflict reported as such, so the re-run never takes an
		// item another consumer holds, nor reports as another's a claim that
		// is this one's.
		mine: func(cur ledger.Item) bool {
			return cur.State == ledger.ItemRunning && cur.Owner == p.Owner &&
				sqlstore.SameTime(cur.LeaseUntil, p.LeaseUntil) && sqlstore.SameTime(cur.UpdatedAt, p.Now) && sqlstore.SameTime(cur.StartedAt, p.Now)
		},
		refusal: func(cur ledger.Item) error {
			switch {
			case cur.State == ledger.ItemRunning:
				return fmt.Errorf("held by %s (attempt %d) until %s: %w",
					cur.Owner, cur.Attempt, cur.LeaseUntil.Format(time.RFC3339Nano), ledger.ErrHeld)
			case cur.State.Terminal():
				return fmt.Errorf("item is %s: %w", cur.State, ledger.ErrTerminal)
			}
			return fmt.Errorf("item is %s: %w", cur.State, ledger.ErrConflict)
		},
		after: claimAfter,
	}
}

// claimAfter is the error of an applied claim: one that made the item
// DEAD (its attempts were exhausted) is refused as terminal.
func claimAfter(it ledger.Item) error {
	if it.State == ledger.ItemDead {
		return fmt.Errorf("%s after attempt %d: %w", it.Error, it.Attempt, ledger.ErrTerminal)
	}
	return nil
}

// Complete implements ledger.Store.
func (s *LedgerStore) Complete(ctx context.Context, p ledger.CompleteParams) (ledger.Item, error) {
	w := completeWrite(p)
	it, err := s.itemWrite(ctx, w.key, w.stmt, w.args, w.mine, w.refusal)
	return w.finish(it, err)
}

// Fail implements ledger.Store.
func (s *LedgerStore) Fail(ctx context.Context, p ledger.FailParams) (ledger.Item, error) {
	state, finished := ledger.ItemFailed, int64(0)
	if p.Permanent || (p.MaxAttempts > 0 && p.Attempt >= p.MaxAttempts) {
		state, finished = ledger.ItemDead, toNanos(p.Now)
	}
	return s.holderWrite(ctx, "fail", ledgerFail, p.Key, p.Owner, p.Attempt, state, p.Now,
		pgx.NamedArgs{"state": string(state), "reason": p.Reason, "finished_at": finished, "now": toNanos(p.Now)})
}

// Release implements ledger.Store.
func (s *LedgerStore) Release(ctx context.Context, p ledger.ReleaseParams) (ledger.Item, error) {
	return s.holderWrite(ctx, "release", ledgerRelease, p.Key, p.Owner, p.Attempt, ledger.ItemRunning, p.Now,
		pgx.NamedArgs{"now": toNanos(p.Now)})
}

// Extend implements ledger.Store.
func (s *LedgerStore) Extend(ctx context.Context, p ledger.ExtendParams) (ledger.Item, error) {
	return s.holderWrite(ctx, "extend", ledgerExtend, p.Key, p.Owner, p.Attempt, ledger.ItemRunning, p.Now,
		pgx.NamedArgs{"lease_until": toNanos(p.LeaseUntil), "now": toNanos(p.Now)})
}

// holderWrite runs stmt, whose condition is the one Complete, Fail,
// Release and Extend share (see holderSpec).
func (s *LedgerStore) holderWrite(ctx context.Context, op string, stmt namedSQL, key ledger.ItemKey, owner string, attempt int,
	want ledger.ItemState, now time.Time, args pgx.NamedArgs) (ledger.Item, error) {
	w := holderSpec(op, stmt, key, owner, attempt, want, now, args)
	it, err := s.itemWrite(ctx, key, w.stmt, w.args, w.mine, w.refusal)
	return w.finish(it, err)
}

// holderSpec is a statement whose condition is the one Complete, Fail,
// Release and Extend share: the item is RUNNING under owner and attempt.
// A Release or Extend re-run after its first run applied applies again to
// the same effect; a Complete or Fail re-run is refused by its own first
// run's record, in state want under owner and attempt at now: its
// success.
func holderSpec(op string, stmt namedSQL, key ledger.ItemKey, owner string, attempt int,
	want ledger.ItemState, now time.Time, args pgx.NamedArgs) itemWriteSpec {
	args["owner"], args["attempt"] = owner, attempt
	return itemWriteSpec{
		op: op, key: key, stmt: stmt, args: itemArgs(key, args),
		mine: func(cur ledger.Item) bool {
			return cur.State == want && cur.Owner == owner && cur.Attempt == attempt && sqlstore.SameTime(cur.UpdatedAt, now)
		},
		refusal: func(cur ledger.Item) error {
			if cur.State.Terminal() {
				return fmt.Errorf("item is %s: %w", cur.State, ledger.ErrTerminal)
			}
			return fmt.Errorf("caller %s#%d, item %s by %s#%d: %w", owner, attempt, cur.State, cur.Owner, cur.Attempt, ledger.ErrConflict)
		},
	}
}

func completeWrite(p ledger.CompleteParams) itemWriteSpec {
	return holderSpec("complete", ledgerComplete, p.Key, p.Owner, p.Attempt, ledger.ItemSucceeded, p.Now,
		pgx.NamedArgs{"result": p.Result, "now": toNanos(p.Now)})
}

// Cancel implements ledger.Store.
func (s *LedgerStore) Cancel(ctx context.Context, p ledger.CancelParams) (ledger.Item, error) {
	args := itemArgs(p.Key, pgx.NamedArgs{"reason": p.Reason, "now": toNanos(p.Now)})
	// A re-run is refused by its own first run's record: CANCELLED with
	// this reason at this Now.
	mine := func(cur ledger.Item) bool {
		return cur.State == ledger.ItemCancelled && cur.Error == p.Reason && sqlstore.SameTime(cur.UpdatedAt, p.Now)
	}
	it, err := s.itemWrite(ctx, p.Key, ledgerCancel, args, mine, func(cur ledger.Item) error {
		if cur.State.Terminal() {
			return fmt.Errorf("item is %s: %w", cur.State, ledger.ErrTerminal)
		}
		return fmt.Errorf("item is %s: %w", cur.State, ledger.ErrConflict)
	})
	return it, wrapLedger("cancel", p.Key, err)
}

// itemWrite runs a conditional statement on the item of key; when
// refused, refusal picks the sentinel from the record that refused it
// (ErrNotFound when there is none).
//
// After a connection lost with the statement in flight, the statement is
// sent again (attempts, retry.go): it may have applied, its answer lost.
// Its conditions hold the guarantees a re-run needs: it either applies
// again to the same effect, or is refused by the record as the first run
// left it. A refusal by a record that mine recognises as the statement's
// own write (its owner, attempt and Now) is then its success, with that
// record; any other refusal is reported as always.
func (s *LedgerStore) itemWrite(ctx context.Context, key ledger.ItemKey, stmt namedSQL, args pgx.NamedArgs, mine func(ledger.Item) bool, refusal func(ledger.Item) error) (ledger.Item, error) {
	var a attempts
	it, err := sqlstore.ScanItem(s.db.queryRow(ctx, &a, stmt.sql, stmt.args(args)...).Scan, key.Run)
	if err == nil {
		return it, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return ledger.Item{}, translate(err)
	}
	var cur, wrote ledger.Item
	var found, applied bool
	err = s.db.batch(ctx, &a, func(b *pgx.Batch) {
		b.Queue(`SELECT `+sqlstore.ItemColumns+` FROM baton_items WHERE run = $1 AND asset = $2 FOR UPDATE`, key.Run.String(), key.Asset)
		b.Queue(stmt.sql, stmt.args(args)...)
	}, func(br pgx.BatchResults) error {
		var err error
		cur, err = sqlstore.ScanItem(br.QueryRow().Scan, key.Run)
		found = err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		wrote, err = sqlstore.ScanItem(br.QueryRow().Scan, key.Run)
		applied = err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		return nil
	})
	switch {
	case err != nil:
		return ledger.Item{}, translate(err)
	case applied:
		return wrote, nil
	case !found:
		return ledger.Item{}, ledger.ErrNotFound
	case a.unsure && mine(cur):
		return cur, nil
	}
	return cur, refusal(cur)
}

// GetItem implements ledger.Store.
func (s *LedgerStore) GetItem(ctx context.Context, key ledger.ItemKey) (ledger.Item, error) {
	it, err := sqlstore.ScanItem(s.db.queryRow(ctx, nil, `SELECT `+sqlstore.ItemColumns+` FROM baton_items WHERE run = $1 AND asset = $2`,
		key.Run.String(), key.Asset).Scan, key.Run)
	if errors.Is(err, pgx.ErrNoRows) {
		err = ledger.ErrNotFound
	}
	if err != nil {
		return ledger.Item{}, fmt.Errorf("get item %s: %w", key, translate(err))
	}
	return it, nil
}

// ListItems implements ledger.Store.
func (s *LedgerStore) ListItems(ctx context.Context, run ledger.RunID) ([]ledger.Item, error) {
	items, err := queryAll(ctx, s.db, `SELECT `+sqlstore.ItemColumns+` FROM baton_items WHERE run = $1 ORDER BY asset`, []any{run.String()},
		func(rows pgx.Rows) (ledger.Item, error) { return sqlstore.ScanItem(rows.Scan, run) })
	if err != nil {
		return nil, fmt.Errorf("list items of %s: %w", run, translate(err))
	}
	return items, nil
}

func itemArgs(key ledger.ItemKey, args pgx.NamedArgs) pgx.NamedArgs {
	args["run"], args["asset"] = key.Run.String(), key.Asset
	return args
}

// wrapLedger wraps a transition's outcome with the operation and subject.
func wrapLedger(op string, subject fmt.Stringer, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s %s: %w", op, subject, err)
}

// ledgerForceSQL is the forced open's upsert, without its RETURNING.
const ledgerForceSQL = `
		INSERT INTO baton_runs AS r (job, nominal, generation, state, fence, open_fence, shards, opened_at, updated_at, digest, trace_id)
		VALUES (@job, @nominal, 1, 'fanning_out', @fence, @fence, @shards, @now, @now, @digest, @trace_id)
		ON CONFLICT (job, nominal) DO UPDATE SET
			generation = r.generation + 1, state = 'fanning_out', cursor = 0, total = 0,
			fence = excluded.fence, open_fence = excluded.fence, shards = excluded.shards, opened_at = excluded.opened_at,
			updated_at = excluded.updated_at, finished_at = 0, succeeded = 0, dead = 0, cancelled = 0,
			digest = excluded.digest, trace_id = excluded.trace_id`

// ledgerClaimExhausted is Claim's condition for DEAD instead of another
// attempt. SET expressions all read the row as it was before the
// statement.
const ledgerClaimExhausted = `(@max_attempts::integer > 0 AND i.attempt >= @max_attempts::integer)`

// The statements. Each write is one conditional statement that returns
// the record it wrote, or no row when its condition failed. They are
// written with named parameters and turned into positional ones once, at
// start (pgx.NamedArgs would parse the text again at every call).
var (
	// Opened: the tick has no record.
	ledgerInsertRun = named(`
		INSERT INTO baton_runs (job, nominal, generation, state, fence, open_fence, shards, opened_at, updated_at, digest, trace_id)
		VALUES (@job, @nominal, 1, 'fanning_out', @fence, @fence, @shards, @now, @now, @digest, @trace_id)
		ON CONFLICT (job, nominal) DO NOTHING
		RETURNING ` + sqlstore.RunColumns)

	// Resumed: fanning out, and no newer coordinator has taken it.
	ledgerResumeRun = named(`
		UPDATE baton_runs SET fence = @fence, updated_at = @now
		WHERE job = @job AND nominal = @nominal AND state = 'fanning_out' AND fence <= @fence
		RETURNING ` + sqlstore.RunColumns)

	// Opened, forced: generation 1, or the next one from scratch.
	ledgerForceRun = named(ledgerForceSQL + `
		RETURNING ` + sqlstore.RunColumns)

	// ledgerForceRun sent again after an unknown outcome: refused when the
	// record is that very open (the same fence and Now, not advanced yet).
	ledgerForceRunAgain = named(ledgerForceSQL + `
		WHERE NOT (r.open_fence = excluded.open_fence AND r.opened_at = excluded.opened_at AND r.cursor = 0)
		RETURNING ` + sqlstore.RunColumns)

	ledgerAdvanceRun = named(`
		UPDATE baton_runs SET
			cursor = @cursor, fence = @fence, updated_at = @now,
			state = CASE WHEN @done::boolean THEN 'fanned_out' ELSE state END,
			total = CASE WHEN @done::boolean THEN @cursor::integer ELSE total END
		WHERE job = @job AND nominal = @nominal AND generation = @generation
			AND state = 'fanning_out' AND fence <= @fence AND cursor <= @cursor::integer
		RETURNING ` + sqlstore.RunColumns)

	ledgerFinishRun = named(`
		UPDATE baton_runs SET
			state = CASE WHEN @dead::integer + @cancelled::integer = 0 THEN 'complete' ELSE 'partial' END,
			succeeded = @succeeded, dead = @dead, cancelled = @cancelled,
			finished_at = @now, updated_at = @now
		WHERE job = @job AND nominal = @nominal AND generation = @generation AND state = 'fanned_out'
		RETURNING ` + sqlstore.RunColumns)

	// absent → RUNNING attempt 1; FAILED or expired RUNNING → RUNNING
	// attempt+1, or DEAD when the attempts are exhausted.
	ledgerClaim = named(`
		INSERT INTO baton_items AS i (run, asset, state, owner, attempt, lease_until, fence, created_at, started_at, updated_at)
		VALUES (@run, @asset, 'RUNNING', @owner, 1, @lease_until, @fence, @now, @now, @now)
		ON CONFLICT (run, asset) DO UPDATE SET
			state       = CASE WHEN ` + ledgerClaimExhausted + ` THEN 'DEAD' ELSE 'RUNNING' END,
			owner       = CASE WHEN ` + ledgerClaimExhausted + ` THEN i.owner ELSE excluded.owner END,
			attempt     = CASE WHEN ` + ledgerClaimExhausted + ` THEN i.attempt ELSE i.attempt + 1 END,
			lease_until = CASE WHEN ` + ledgerClaimExhausted + ` THEN i.lease_until ELSE excluded.lease_until END,
			fence       = CASE WHEN ` + ledgerClaimExhausted + ` THEN i.fence ELSE excluded.fence END,
			error       = CASE WHEN ` + ledgerClaimExhausted + ` THEN 'attempts exhausted' ELSE i.error END,
			started_at  = CASE WHEN ` + ledgerClaimExhausted + ` THEN i.started_at ELSE excluded.started_at END,
			finished_at = CASE WHEN ` + ledgerClaimExhausted + ` THEN excluded.updated_at ELSE i.finished_at END,
			updated_at  = excluded.updated_at
		WHERE i.state = 'FAILED' OR (i.state = 'RUNNING' AND i.lease_until + @skew::bigint <= @now::bigint)
		RETURNING ` + sqlstore.ItemColumns)

	ledgerComplete = named(`
		UPDATE baton_items SET state = 'SUCCEEDED', result = @result, finished_at = @now, updated_at = @now
		WHERE run = @run AND asset = @asset AND state = 'RUNNING' AND owner = @owner AND attempt = @attempt
		RETURNING ` + sqlstore.ItemColumns)

	ledgerFail = named(`
		UPDATE baton_items SET state = @state, error = @reason, finished_at = @finished_at, updated_at = @now
		WHERE run = @run AND asset = @asset AND state = 'RUNNING' AND owner = @owner AND attempt = @attempt
		RETURNING ` + sqlstore.ItemColumns)

	ledgerRelease = named(`
		UPDATE baton_items SET lease_until = @now, updated_at = @now
		WHERE run = @run AND asset = @asset AND state = 'RUNNING' AND owner = @owner AND attempt = @attempt
		RETURNING ` + sqlstore.ItemColumns)

	// absent (unclaimed only) → FAILED attempt 0 with the wait; FAILED
	// (at @attempt unless unclaimed) → the wait noted at its attempt.
	ledgerNoteWait = named(`
		INSERT INTO baton_items AS i (run, asset, state, attempt, created_at, updated_at, wait_at, wait_limit, wait_key, wait_attempt)
		SELECT @run, @asset, 'FAILED', 0, @now::bigint, @now::bigint, @wait_at::bigint, @wait_limit::text, @wait_key::text, 0
		WHERE @unclaimed::boolean OR EXISTS (SELECT 1 FROM baton_items WHERE run = @run AND asset = @asset)
		ON CONFLICT (run, asset) DO UPDATE SET
			wait_at = excluded.wait_at, wait_limit = excluded.wait_limit, wait_key = excluded.wait_key,
			wait_attempt = i.attempt, updated_at = excluded.updated_at
		WHERE i.state = 'FAILED' AND (@unclaimed::boolean OR i.attempt = @attempt::integer)
		RETURNING ` + sqlstore.ItemColumns)

	ledgerCancel = named(`
		INSERT INTO baton_items AS i (run, asset, state, error, created_at, finished_at, updated_at)
		VALUES (@run, @asset, 'CANCELLED', @reason, @now, @now, @now)
		ON CONFLICT (run, asset) DO UPDATE SET
			state = 'CANCELLED', error = excluded.error, finished_at = excluded.finished_at, updated_at = excluded.updated_at
		WHERE i.state IN ('RUNNING', 'FAILED')
		RETURNING ` + sqlstore.ItemColumns)

	ledgerExtend = named(`
		UPDATE baton_items SET lease_until = @lease_until, updated_at = @now
		WHERE run = @run AND asset = @asset AND state = 'RUNNING' AND owner = @owner AND attempt = @attempt
		RETURNING ` + sqlstore.ItemColumns)
)

// namedSQL is a statement written with named parameters (@name), turned
// into positional ones ($1, $2, …) once.
type namedSQL struct {
	sql   string
	names []string // the name of $1, $2, …
}

var paramName = regexp.MustCompile(`@([a-z_]+)`)

// named compiles a statement with named parameters.
func named(sql string) namedSQL {
	var names []string
	index := map[string]int{}
	out := paramName.ReplaceAllStringFunc(sql, func(m string) string {
		name := m[1:]
		i, ok := index[name]
		if !ok {
			names = append(names, name)
			i = len(names)
			index[name] = i
		}
		return "$" + strconv.Itoa(i)
	})
	return namedSQL{sql: out, names: names}
}

// args returns the values of the statement's parameters, in order; a
// name args lacks is a bug of this package, and sent as NULL.
func (n namedSQL) args(args pgx.NamedArgs) []any {
	out := make([]any, len(n.names))
	for i, name := range n.names {
		out[i] = args[name]
	}
	return out
}

// tickJob and tickNominal are the (job, nominal) the record of run id is
// kept under (ledger.TickOf): a submission's under job+key and the epoch.
func tickJob(id ledger.RunID) string {
	job, _ := ledger.TickOf(id)
	return job
}

func tickNominal(id ledger.RunID) time.Time {
	_, nominal := ledger.TickOf(id)
	return nominal
}
