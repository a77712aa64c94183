package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// openWriterTestDB opens a database with a table t(k TEXT PRIMARY KEY).
func openWriterTestDB(t *testing.T) *DB {
	t.Helper()
	db := openLedgerTestDB(t)
	_, err := db.SQL().ExecContext(t.Context(), `CREATE TABLE t (k TEXT PRIMARY KEY) STRICT`)
	require.NoError(t, err)
	return db
}

func insert(k string) writeFunc {
	return func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO t (k) VALUES (?)`, k)
		return err
	}
}

func keys(t *testing.T, db *DB) []string {
	t.Helper()
	rows, err := db.SQL().QueryContext(t.Context(), `SELECT k FROM t ORDER BY k`)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		out = append(out, k)
	}
	require.NoError(t, rows.Err())
	return out
}

// pending returns a job as submit makes it, for a test that runs a group
// by hand.
func pending(ctx context.Context, fn writeFunc, atomic bool) *writeJob {
	return &writeJob{ctx: ctx, writeFunc: fn, atomic: atomic, done: make(chan error, 1)}
}

// wait returns the job's result once the writer finished it.
func (j *writeJob) wait() error { return <-j.done }

// groupOf runs first and the queued jobs as one group on a writer of db
// whose queue holds queued, and returns what stays queued.
func groupOf(db *DB, first *writeJob, queued ...*writeJob) []*writeJob {
	w := &writer{db: db.sql, jobs: make(chan *writeJob, len(queued))}
	for _, j := range queued {
		w.jobs <- j
	}
	w.group(first)
	close(w.jobs)
	var left []*writeJob
	for j := range w.jobs {
		left = append(left, j)
	}
	return left
}

// The writes queued behind the first share its transaction and commit.
func TestWriterGroupsQueuedWrites(t *testing.T) {
	t.Parallel()
	db := openWriterTestDB(t)
	ctx := t.Context()
	var mu sync.Mutex
	txs := map[*sql.Tx]int{}
	recording := func(k string) writeFunc {
		return func(ctx context.Context, tx *sql.Tx) error {
			mu.Lock()
			txs[tx]++
			mu.Unlock()
			return insert(k)(ctx, tx)
		}
	}
	first := pending(ctx, recording("a"), false)
	queued := []*writeJob{pending(ctx, recording("b"), false), pending(ctx, recording("c"), true), pending(ctx, recording("d"), false)}
	require.Empty(t, groupOf(db, first, queued...))
	for _, j := range append([]*writeJob{first}, queued...) {
		require.NoError(t, j.wait())
	}
	require.Len(t, txs, 1, "one transaction")
	require.Equal(t, []string{"a", "b", "c", "d"}, keys(t, db))
}

// A write that fails leaves the writes before it be, and ends the group:
// the ones behind it wait for the next.
func TestWriterFailedWriteEndsGroup(t *testing.T) {
	t.Parallel()
	db := openWriterTestDB(t)
	ctx := t.Context()
	require.NoError(t, db.write(ctx, insert("dup")))

	first := pending(ctx, insert("a"), false)
	failing := pending(ctx, insert("dup"), false) // primary key taken
	after := pending(ctx, insert("b"), false)
	left := groupOf(db, first, failing, after)
	require.NoError(t, first.wait())
	require.ErrorContains(t, failing.wait(), "UNIQUE")
	require.Equal(t, []*writeJob{after}, left, "not run in the group")
	require.Equal(t, []string{"a", "dup"}, keys(t, db))
}

// An atomic write that fails undoes all of its statements, and only its own.
func TestWriterAtomicWriteRollsBack(t *testing.T) {
	t.Parallel()
	db := openWriterTestDB(t)
	ctx := t.Context()
	errBoom := errors.New("boom")
	first := pending(ctx, insert("a"), false)
	twoThenFail := pending(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := insert("x")(ctx, tx); err != nil {
			return err
		}
		if err := insert("y")(ctx, tx); err != nil {
			return err
		}
		return errBoom
	}, true)
	groupOf(db, first, twoThenFail)
	require.NoError(t, first.wait())
	require.ErrorIs(t, twoThenFail.wait(), errBoom)
	require.Equal(t, []string{"a"}, keys(t, db))

	require.NoError(t, db.writeAtomic(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := insert("x")(ctx, tx); err != nil {
			return err
		}
		return insert("y")(ctx, tx)
	}))
	require.Equal(t, []string{"a", "x", "y"}, keys(t, db))
}

// A write whose context ended before its turn is not run.
func TestWriterSkipsCancelledWrite(t *testing.T) {
	t.Parallel()
	db := openWriterTestDB(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	first := pending(t.Context(), insert("a"), false)
	cancelled := pending(ctx, insert("b"), false)
	after := pending(t.Context(), insert("c"), false)
	require.Empty(t, groupOf(db, first, cancelled, after), "a skipped write does not end the group")
	require.ErrorIs(t, cancelled.wait(), context.Canceled)
	require.NoError(t, first.wait())
	require.NoError(t, after.wait())
	require.Equal(t, []string{"a", "c"}, keys(t, db))
	require.ErrorIs(t, db.write(ctx, insert("d")), context.Canceled)
}

// A failed commit fails every write of the group.
func TestWriterFailedCommit(t *testing.T) {
	t.Parallel()
	db := openWriterTestDB(t)
	ctx := t.Context()
	first := pending(ctx, insert("a"), false)
	ender := pending(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "ROLLBACK") // the transaction ends under the writer
		return err
	}, false)
	groupOf(db, first, ender)
	require.ErrorContains(t, first.wait(), "commit")
	require.ErrorContains(t, ender.wait(), "commit")
	require.Empty(t, keys(t, db))
	require.NoError(t, db.write(ctx, insert("b")), "the writer goes on")
}

// A write that panics fails alone; the writer goes on.
func TestWriterRecoversPanic(t *testing.T) {
	t.Parallel()
	db := openWriterTestDB(t)
	err := db.write(t.Context(), func(context.Context, *sql.Tx) error { panic("bad write") })
	require.ErrorContains(t, err, "bad write")
	require.NoError(t, db.write(t.Context(), insert("a")))
	require.Equal(t, []string{"a"}, keys(t, db))
}

// Concurrent writes all apply, each once; after Close, writes fail.
func TestWriterConcurrentWritesAndClose(t *testing.T) {
	t.Parallel()
	db, err := Open(t.Context(), t.TempDir()+"/w.db", nil)
	require.NoError(t, err)
	_, err = db.SQL().ExecContext(t.Context(), `CREATE TABLE t (k TEXT PRIMARY KEY) STRICT`)
	require.NoError(t, err)
	const n = 200
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = db.write(t.Context(), insert(fmt.Sprintf("k%03d", i))) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "write %d", i)
	}
	require.Len(t, keys(t, db), n)
	require.NoError(t, db.Close())
	require.ErrorIs(t, db.write(t.Context(), insert("late")), errClosed)
	require.NoError(t, db.Close(), "Close twice")
}

// An atomic write that fails and cannot be undone alone (its savepoint is
// gone) is not committed: the whole group rolls back, and every write of
// it fails.
func TestWriterAbortsGroupItCannotUndo(t *testing.T) {
	t.Parallel()
	db := openWriterTestDB(t)
	ctx := t.Context()
	errBoom := errors.New("boom")
	first := pending(ctx, insert("a"), false)
	stray := pending(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "RELEASE write"); err != nil { // its own savepoint, early
			return err
		}
		if err := insert("x")(ctx, tx); err != nil {
			return err
		}
		return errBoom
	}, true)
	after := pending(ctx, insert("b"), false)
	left := groupOf(db, first, stray, after)
	require.ErrorIs(t, stray.wait(), errBoom)
	require.ErrorIs(t, first.wait(), errGroupAborted)
	require.Equal(t, []*writeJob{after}, left)
	require.Empty(t, keys(t, db), "neither a nor x committed")
	require.NoError(t, db.write(ctx, insert("c")), "the writer goes on")
	require.Equal(t, []string{"c"}, keys(t, db))
}
