package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/sqlite"
)

// RawLeasesDDL creates raw_leases, a table of the SQLite lease table's
// shape, for the raw reference of a lease write.
const RawLeasesDDL = `CREATE TABLE IF NOT EXISTS raw_leases (
    job         TEXT PRIMARY KEY,
    owner       TEXT    NOT NULL DEFAULT '',
    fence       INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL DEFAULT 0,
    acquired_at INTEGER NOT NULL DEFAULT 0
) STRICT`

// RawLeaseUpsert is the conditional write a lease acquisition makes, on
// raw_leases and with none of the store's code around it. Its parameters:
// job, owner, expires_at, acquired_at (unix nanoseconds), and the time at
// or after which a held lease counts as expired.
const RawLeaseUpsert = `
INSERT INTO raw_leases (job, owner, fence, expires_at, acquired_at)
VALUES (?1, ?2, 1, ?3, ?4)
ON CONFLICT (job) DO UPDATE SET
    owner = excluded.owner, fence = raw_leases.fence + 1,
    expires_at = excluded.expires_at, acquired_at = excluded.acquired_at
WHERE raw_leases.owner = '' OR raw_leases.owner = excluded.owner OR raw_leases.expires_at <= ?5`

// rawQueue is the queue raw batch sends go to.
const rawQueue = "raw"

// SQLiteTarget opens each Env on a new database file in dir.
func SQLiteTarget(dir string) Target {
	return Target{Name: "sqlite", dir: dir, OpenFunc: func(ctx context.Context, name string) (*Env, error) {
		return openSQLite(ctx, filepath.Join(dir, name+".db"))
	}}
}

func openSQLite(ctx context.Context, path string) (env *Env, err error) {
	plain, err := sqlitebackend.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			plain.Close()
		}
	}()
	db, err := sqlite.Open(ctx, path, nil) // a second handle for the raw statements
	if err != nil {
		return nil, err
	}
	closeAll := func() error { return errors.Join(db.Close(), plain.Close()) }
	defer func() {
		if err != nil {
			db.Close()
		}
	}()
	if _, err := sqlite.OpenQueue(ctx, db, rawQueue, nil); err != nil {
		return nil, err
	}
	if _, err := db.SQL().ExecContext(ctx, RawLeasesDDL); err != nil {
		return nil, fmt.Errorf("create raw_leases: %w", err)
	}
	upsert, err := db.SQL().PrepareContext(ctx, RawLeaseUpsert)
	if err != nil {
		return nil, fmt.Errorf("prepare raw upsert: %w", err)
	}
	insert, err := db.SQL().PrepareContext(ctx, `INSERT INTO messages (queue, body, attributes, sent_at) VALUES (?, ?, ?, ?)`)
	if err != nil {
		return nil, fmt.Errorf("prepare raw insert: %w", err)
	}

	counted, tally := countedBackend(plain)

	return &Env{
		Backend: counted,
		Calls:   tally,
		Plain:   plain,
		RawWriteFunc: func(ctx context.Context, key string) error {
			now := time.Now().UnixNano()
			res, err := upsert.ExecContext(ctx, key, "raw", now+int64(time.Minute), now, now)
			if err != nil {
				return fmt.Errorf("raw upsert: %w", err)
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				return fmt.Errorf("raw upsert of %s: %d rows (%v)", key, n, err)
			}
			return nil
		},
		RawSendFunc: func(ctx context.Context, msgs []queue.Message) error {
			tx, err := db.SQL().BeginTx(ctx, nil)
			if err != nil {
				return fmt.Errorf("raw send: %w", err)
			}
			defer tx.Rollback()
			st := tx.StmtContext(ctx, insert)
			at := time.Now().UnixNano()
			for _, m := range msgs {
				enc, err := json.Marshal(m.Attributes)
				if err != nil {
					return err
				}
				if _, err := st.ExecContext(ctx, rawQueue, m.Body, string(enc), at); err != nil {
					return fmt.Errorf("raw send: %w", err)
				}
			}
			return tx.Commit()
		},
		Info:      "one WAL file per scenario, synchronous=NORMAL, 8 connections",
		CloseFunc: closeAll,
	}, nil
}
