package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
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
// be; a commit that fails fails every write of the group.

// maxGroup bounds the writes one transaction takes.
const maxGroup = 64

// writeFunc is one write: its statements run on tx, under ctx (the
// caller's, made uncancellable: a statement interrupted inside a
// transaction would roll the whole group back). It returns backend
// errors only; outcomes (a refused condition) are its results.
type writeFunc func(ctx context.Context, tx *sql.Tx) error

type writeJob struct {
	ctx    context.Context
	fn     writeFunc
	atomic bool
	err    error // fn's own
	result error // what the caller gets
	// done is locked by the caller when it queues the job and unlocked by
	// the writer once result is set. (A mutex rather than a channel: the
	// caller may run in a synctest bubble that the writer is not in, and a
	// bubble's channels are its own.)
	done sync.Mutex
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
}

func startWriter(db *sql.DB) *writer {
	w := &writer{db: db, jobs: make(chan *writeJob), quit: make(chan struct{}), stopped: make(chan struct{})}
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
		first.finish(err)
		return
	}
	jobs := []*writeJob{first}
	ok := w.runJob(tx, first)
	for ok && len(jobs) < maxGroup {
		var j *writeJob
		select {
		case j = <-w.jobs:
		default:
		}
		if j == nil {
			break
		}
		jobs = append(jobs, j)
		ok = w.runJob(tx, j)
	}
	// After a failed write the transaction may be gone (SQLite rolls it
	// back on some errors); nothing else runs in it, and its commit says.
	err = tx.Commit()
	for _, j := range jobs {
		switch {
		case j.err != nil:
			j.finish(j.err)
		case err != nil:
			j.finish(fmt.Errorf("commit: %w", err))
		default:
			j.finish(nil)
		}
	}
}

// finish hands the job's result to its caller.
func (j *writeJob) finish(result error) {
	j.result = result
	j.done.Unlock()
}

// runJob runs j in tx, under a savepoint when j is atomic, and reports
// whether the transaction may take more writes.
func (w *writer) runJob(tx *sql.Tx, j *writeJob) (ok bool) {
	if err := j.ctx.Err(); err != nil {
		j.err = err // never started: nothing written
		return true
	}
	ctx := context.WithoutCancel(j.ctx)
	if j.atomic {
		if _, err := tx.ExecContext(ctx, "SAVEPOINT write"); err != nil {
			j.err = err
			return false
		}
	}
	j.err = safeWrite(ctx, tx, j.fn)
	if !j.atomic {
		return j.err == nil
	}
	if j.err != nil {
		if _, err := tx.ExecContext(ctx, "ROLLBACK TO write"); err != nil {
			return false
		}
	}
	_, err := tx.ExecContext(ctx, "RELEASE write")
	return err == nil && j.err == nil
}

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

// writeAtomic runs fn as write does, under a savepoint: when fn returns an
// error, every statement it ran is undone.
func (d *DB) writeAtomic(ctx context.Context, fn writeFunc) error {
	return d.submit(ctx, fn, true)
}

func (d *DB) submit(ctx context.Context, fn writeFunc, atomic bool) error {
	j := &writeJob{ctx: ctx, fn: fn, atomic: atomic}
	j.done.Lock()
	select {
	case d.writer.jobs <- j:
	case <-ctx.Done():
		return ctx.Err()
	case <-d.writer.quit:
		return errClosed
	}
	j.done.Lock() // until finish
	return j.result
}
