package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The writes of one process run on one goroutine, the writer, one after
// the other. SQLite lets one connection write at a time, and a connection
// that finds the write lock taken sleeps in its busy handler (1, 2, 5,
// 10 ms and up) before it looks again, so concurrent writers of one
// process would wait far longer than the writes take: they queue for the
// writer instead. Other processes sharing the file still meet the busy
// timeout.
//
// The writer commits the writes queued at the same time together (group
// commit): it begins an IMMEDIATE transaction, runs every write waiting
// for it (up to maxGroup), each as it would run alone, and commits once.
// A commit costs about as much as the write it ends, so under load a
// write costs about half. Each write is still one conditional statement,
// or one all-or-nothing sequence, judged on the state the writes before
// it left; it takes effect, for every other connection, at the commit,
// before its caller returns. A write that fails alone leaves the others
// be (and ends the group); a commit that fails fails every write of the
// group, and so does an all-or-nothing write that failed and could not be
// undone alone: the group is rolled back whole.

// maxGroup bounds the writes one transaction takes.
const maxGroup = 64

// writeFunc is one write: its statements run on tx, under ctx (the
// caller's, made uncancellable: a statement interrupted inside a
// transaction would roll the whole group back). It returns backend
// errors only; outcomes (a refused condition) are its results.
type writeFunc func(ctx context.Context, tx *sql.Tx) error

type writeJob struct {
	ctx       context.Context
	writeFunc writeFunc
	atomic    bool
	err       error      // writeFunc's own
	done      chan error // takes the caller's result; one of the writer's
}

// errClosed is the error of a write queued after Close.
var errClosed = errors.New("database closed")

// writer runs the jobs sent on jobs until quit is closed.
type writer struct {
	db       *sql.DB
	jobs     chan *writeJob
	quit     chan struct{}
	stopped  chan struct{}
	stopOnce sync.Once
	// free holds the channels that carry results back to callers, made
	// with the writer: a caller in a synctest bubble the writer is not in
	// (a database opened outside a test's bubble) may use them, where the
	// writer could not send on a channel made in the bubble. A write waits
	// for one when maxWaiting writes are under way.
	free chan chan error
}

// maxWaiting bounds the writes under way at once.
const maxWaiting = 256

func startWriter(db *sql.DB) *writer {
	w := &writer{
		db: db, jobs: make(chan *writeJob), quit: make(chan struct{}), stopped: make(chan struct{}),
		free: make(chan chan error, maxWaiting),
	}
	for range maxWaiting {
		w.free <- make(chan error, 1)
	}
	go w.run()
	return w
}

// stop ends the writer once the group it runs is committed. It may be
// called more than once.
func (w *writer) stop() {
	w.stopOnce.Do(func() { close(w.quit) })
	<-w.stopped
}

func (w *writer) run() {
	defer close(w.stopped)
	for {
		select {
		case j := <-w.jobs:
			w.group(j)
		case <-w.quit:
			return
		}
	}
}

// group runs first and the jobs queued behind it in one transaction.
func (w *writer) group(first *writeJob) {
	tx, err := w.db.BeginTx(context.Background(), nil) // IMMEDIATE (see Open)
	if err != nil {
		first.done <- err
		return
	}
	jobs := []*writeJob{first}
	next := w.runJob(tx, first)
	for next == more && len(jobs) < maxGroup {
		var j *writeJob
		select {
		case j = <-w.jobs:
		default:
		}
		if j == nil {
			break
		}
		jobs = append(jobs, j)
		next = w.runJob(tx, j)
	}
	if next == abort {
		err = errors.Join(errGroupAborted, tx.Rollback())
	} else {
		// After a failed write the transaction may be gone (SQLite rolls
		// it back on some errors); nothing else ran in it, and its commit
		// says.
		err = tx.Commit()
	}
	for _, j := range jobs {
		switch {
		case j.err != nil:
			j.done <- j.err
		case err != nil:
			j.done <- fmt.Errorf("commit: %w", err)
		default:
			j.done <- nil
		}
	}
}

// errGroupAborted fails the writes of a group rolled back whole.
var errGroupAborted = errors.New("a write of the same transaction could not be undone alone; all were rolled back")

// What a group does after a write.
type afterWrite int

const (
	more  afterWrite = iota // the transaction takes more writes
	last                    // commit what it holds
	abort                   // roll it all back: a failed write could not be undone
)

// runJob runs j in tx, under a savepoint when j is atomic, and says what
// the transaction does next.
func (w *writer) runJob(tx *sql.Tx, j *writeJob) afterWrite {
	if err := j.ctx.Err(); err != nil {
		j.err = err // never started: nothing written
		return more
	}
	ctx := uncancelled(j.ctx)
	if j.atomic {
		if _, err := tx.ExecContext(ctx, "SAVEPOINT write"); err != nil {
			j.err = err
			return last
		}
	}
	j.err = safeWrite(ctx, tx, j.writeFunc)
	switch {
	case !j.atomic && j.err != nil:
		return last
	case !j.atomic:
		return more
	case j.err != nil:
		if _, err := tx.ExecContext(ctx, "ROLLBACK TO write"); err != nil {
			return abort
		}
	}
	if _, err := tx.ExecContext(ctx, "RELEASE write"); err != nil {
		return abort
	}
	if j.err != nil {
		return last
	}
	return more
}

// uncancelled returns ctx's values without its cancellation, as
// context.WithoutCancel does, in a context whose Value allocates
// nothing: context.WithoutCancel's copies itself into an interface on
// every lookup, and the statements' tracing looks ctx's span up on every
// statement (see trace.go).
func uncancelled(ctx context.Context) context.Context { return &detached{ctx} }

type detached struct{ context.Context }

func (*detached) Deadline() (time.Time, bool) { return time.Time{}, false }
func (*detached) Done() <-chan struct{}       { return nil }
func (*detached) Err() error                  { return nil }

// safeWrite runs fn, turning a panic into an error: the writer serves the
// whole process.
func safeWrite(ctx context.Context, tx *sql.Tx, fn writeFunc) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("write panicked: %v", r)
		}
	}()
	return fn(ctx, tx)
}

// write runs fn as one write of the process (see the writer) and returns
// its error, or the commit's. fn must run at most one statement that
// writes; a sequence of statements that must apply together or not at all
// goes through writeAtomic. A write still queued when ctx ends is dropped
// with ctx's error; one that started finishes.
func (d *DB) write(ctx context.Context, fn writeFunc) error {
	return d.submit(ctx, fn, false)
}

// writeOne runs one statement as write does and reports whether it
// changed a row.
func (d *DB) writeOne(ctx context.Context, query string, args ...any) (bool, error) {
	var n int64
	err := d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n > 0, err
}

// writeAtomic runs fn as write does, under a savepoint: when fn returns an
// error, every statement it ran is undone.
func (d *DB) writeAtomic(ctx context.Context, fn writeFunc) error {
	return d.submit(ctx, fn, true)
}

func (d *DB) submit(ctx context.Context, fn writeFunc, atomic bool) error {
	w := d.writer
	var done chan error
	select {
	case done = <-w.free:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { w.free <- done }()
	j := &writeJob{ctx: ctx, writeFunc: fn, atomic: atomic, done: done}
	select {
	case w.jobs <- j:
	case <-ctx.Done():
		return ctx.Err()
	case <-w.quit:
		return errClosed
	}
	return <-done
}
