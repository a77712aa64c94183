package sqlstore

import (
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/ledger"
)

// RunColumns are the columns of a run record that ScanRun reads, in its
// order: the same in every engine's runs table.
const RunColumns = `job, nominal, generation, state, cursor, total, fence, open_fence, shards,
	opened_at, updated_at, finished_at, succeeded, dead, cancelled, digest, trace_id`

// ItemColumns are the columns of an item record that ItemRow scans, in
// its order: the same in every engine's items table.
const ItemColumns = `asset, state, owner, attempt, lease_until, fence, error, result,
	created_at, started_at, finished_at, updated_at, wait_at, wait_limit, wait_key, wait_attempt`

// MarkColumns are the columns of a settle mark that ScanMark reads, in
// its order.
const MarkColumns = `level, idx, succeeded, dead, cancelled, at`

// ScanRun scans RunColumns.
func ScanRun(scan ScanFunc) (ledger.Run, error) {
	var (
		r                                        ledger.Run
		state                                    string
		nominal, openedAt, updatedAt, finishedAt int64
	)
	err := scan(&r.ID.Job, &nominal, &r.ID.Generation, &state, &r.Cursor, &r.Total, &r.Fence, &r.OpenFence, &r.Shards,
		&openedAt, &updatedAt, &finishedAt, &r.Succeeded, &r.Dead, &r.Cancelled, &r.Digest, &r.TraceID)
	if err != nil {
		return ledger.Run{}, err
	}
	// A nominal time is always stored as itself: 0 is 1970, not "none".
	r.ID = ledger.RunIDOf(r.ID.Job, time.Unix(0, nominal).UTC(), r.ID.Generation)
	r.State = ledger.RunState(state)
	r.OpenedAt, r.UpdatedAt, r.FinishedAt = Time(openedAt), Time(updatedAt), Time(finishedAt)
	return r, nil
}

// ItemRow is a row of ItemColumns as scanned (Dest), before it becomes an
// item (Item): for a scan that reads more columns than ItemColumns.
type ItemRow struct {
	it                                                      ledger.Item
	state                                                   string
	leaseUntil, createdAt, startedAt, finishedAt, updatedAt int64
	waitAt                                                  int64
}

// Dest returns the scan destinations of ItemColumns.
func (r *ItemRow) Dest() []any {
	return []any{&r.it.Key.Asset, &r.state, &r.it.Owner, &r.it.Attempt, &r.leaseUntil, &r.it.Fence, &r.it.Error, &r.it.Result,
		&r.createdAt, &r.startedAt, &r.finishedAt, &r.updatedAt, &r.waitAt, &r.it.Wait.Limit, &r.it.Wait.Key, &r.it.Wait.Attempt}
}

// Asset is the scanned item's asset.
func (r *ItemRow) Asset() string { return r.it.Key.Asset }

// Item is the row as an item of run.
func (r *ItemRow) Item(run ledger.RunID) ledger.Item {
	it := r.it
	it.Key.Run = run
	it.State = ledger.ItemState(r.state)
	it.LeaseUntil = Time(r.leaseUntil)
	it.CreatedAt, it.StartedAt = Time(r.createdAt), Time(r.startedAt)
	it.FinishedAt, it.UpdatedAt = Time(r.finishedAt), Time(r.updatedAt)
	it.Wait.At = Time(r.waitAt)
	return it
}

// ScanItem scans ItemColumns of an item of run.
func ScanItem(scan ScanFunc, run ledger.RunID) (ledger.Item, error) {
	var r ItemRow
	if err := scan(r.Dest()...); err != nil {
		return ledger.Item{}, err
	}
	return r.Item(run), nil
}

// ScanMark scans MarkColumns of a mark of run.
func ScanMark(scan ScanFunc, run ledger.RunID) (ledger.Mark, error) {
	m := ledger.Mark{Run: run}
	var at int64
	if err := scan(&m.Level, &m.Index, &m.Succeeded, &m.Dead, &m.Cancelled, &at); err != nil {
		return ledger.Mark{}, err
	}
	m.At = Time(at)
	return m, nil
}

// CheckMark reports which of p's numbers is negative, if any.
func CheckMark(p ledger.MarkParams) error {
	for _, f := range []struct {
		name string
		v    int
	}{{"level", p.Level}, {"index", p.Index}, {"succeeded", p.Succeeded}, {"dead", p.Dead}, {"cancelled", p.Cancelled}} {
		if f.v < 0 {
			return fmt.Errorf("mark %s: %s %d is negative", p.Run, f.name, f.v)
		}
	}
	return nil
}

// MarkWrite is the outcome of an engine's write of a settle mark: an
// insert that does nothing when the mark exists, then the mark as stored.
type MarkWrite struct {
	Mark    ledger.Mark // as stored after the write
	Existed bool        // the insert found the mark written already
	// Unsure: the write was sent again after an unknown outcome, so the
	// mark it found may be its own first send's.
	Unsure bool
}

// MarkDone implements ledger.Store's MarkDone over write, the engine's
// statements: it checks p, and turns a mark that existed into
// ledger.ErrTerminal unless it is the caller's own (same counts and Now)
// found by a re-sent write.
func MarkDone(p ledger.MarkParams, write func() (MarkWrite, error)) (ledger.Mark, error) {
	if err := CheckMark(p); err != nil {
		return ledger.Mark{}, err
	}
	subject := fmt.Sprintf("mark %s level %d index %d", p.Run, p.Level, p.Index)
	w, err := write()
	if err != nil {
		return ledger.Mark{}, fmt.Errorf("%s: %w", subject, err)
	}
	m := w.Mark
	mine := m.Succeeded == p.Succeeded && m.Dead == p.Dead && m.Cancelled == p.Cancelled && SameTime(m.At, p.Now)
	if w.Existed && !(w.Unsure && mine) {
		return m, fmt.Errorf("%s: written already: %w", subject, ledger.ErrTerminal)
	}
	return m, nil
}

// DefaultListLimit is how many records a listing returns when its params
// give no limit.
const DefaultListLimit = 20

// ListLimit is a listing's limit n, DefaultListLimit when n <= 0.
func ListLimit(n int) int {
	if n <= 0 {
		return DefaultListLimit
	}
	return n
}

// RunsBefore is ledger.ListRunsParams.Before as a stored bound: nominal
// times before it, every one when it is zero.
func RunsBefore(before time.Time) int64 {
	if before.IsZero() {
		return 1<<63 - 1
	}
	return Nanos(before)
}
