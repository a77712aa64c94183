package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/sqlstore"
)

// LeaseStore is lease.Store on the leases table: one row per job, with an
// empty owner when free and the fence kept across releases.
//
// Acquire is one conditional UPSERT, applied only when the row is free,
// expired at the caller's Now (with its skew allowance) or already the
// owner's; the row's own fence+1 is the new fence. SQLite does not return
// the old row on a refused update, so the same write then reads the
// holder, in the same transaction: the HeldError reports the record that
// refused the write. Renew and Release are one conditional UPDATE each.
// Statements are prepared once per store.
type LeaseStore struct {
	sqlstore.Pauses // lease.Pauser over statements
	db              *DB
	// names maps the table names in the queries below to this store's:
	// nil for the jobs' leases; the lock tables for NewLockStore.
	names *strings.Replacer

	mu    sync.Mutex
	stmts map[string]*sql.Stmt // by query text
}

var _ lease.Store = (*LeaseStore)(nil)

// NewLeaseStore returns the lease store of db.
func NewLeaseStore(db *DB) *LeaseStore {
	return &LeaseStore{Pauses: sqlstore.Pauses{DB: statements{db}}, db: db, stmts: map[string]*sql.Stmt{}}
}

// NewLockStore returns the store of db's application locks (batonlock):
// the same records and operations as the jobs' leases, in the tables
// locks and lock_contention, so that no lock is ever a job's lease. A
// lock's key is its record's job. Its rows are never deleted, so a key's
// fence never goes back.
func NewLockStore(db *DB) *LeaseStore {
	return &LeaseStore{
		Pauses: sqlstore.Pauses{DB: statements{db}}, db: db, stmts: map[string]*sql.Stmt{},
		names: strings.NewReplacer("lease_contention", "lock_contention", "leases", "locks"),
	}
}

// q returns query on this store's tables.
func (s *LeaseStore) q(query string) string {
	if s.names == nil {
		return query
	}
	return s.names.Replace(query)
}

// leaseAcquireSQL inserts an absent row with fence 1, or takes the row over
// when it is free, expired (expires_at+skew <= now, written as
// expires_at <= now-skew) or already the owner's. It returns the row
// written, and no row when another owner's live lease refuses the write.
const leaseAcquireSQL = `
INSERT INTO leases (job, owner, fence, expires_at, acquired_at)
VALUES (?1, ?2, 1, ?3, ?4)
ON CONFLICT (job) DO UPDATE SET
    owner       = excluded.owner,
    fence       = leases.fence + 1,
    expires_at  = excluded.expires_at,
    acquired_at = excluded.acquired_at
WHERE leases.owner = '' OR leases.owner = excluded.owner OR leases.expires_at <= ?5
RETURNING ` + sqlstore.LeaseColumns

// leaseRenewSQL extends the row when owner and fence match and it has not
// expired at now (no skew allowance).
const leaseRenewSQL = `
UPDATE leases SET expires_at = ?4
WHERE job = ?1 AND owner = ?2 AND fence = ?3 AND expires_at > ?5
RETURNING ` + sqlstore.LeaseColumns

// leaseReleaseSQL frees the row when owner and fence match; the fence and
// the time of the latest acquisition stay.
const leaseReleaseSQL = `
UPDATE leases SET owner = '', expires_at = 0
WHERE job = ?1 AND owner = ?2 AND fence = ?3`

const leaseSelectSQL = `SELECT ` + sqlstore.LeaseColumns + ` FROM leases WHERE job = ?1`

// Acquire implements lease.Store.
func (s *LeaseStore) Acquire(ctx context.Context, p lease.AcquireParams) (lease.Lease, error) {
	if err := sqlstore.CheckLeaseParams(p.Job, p.Owner, p.TTL, p.Now); err != nil {
		return lease.Lease{}, fmt.Errorf("acquire lease %q: %w", p.Job, err)
	}
	now := toNanos(p.Now)
	args := []any{p.Job, p.Owner, toNanos(p.Now.Add(p.TTL)), now, now - int64(p.Skew)}
	upsert, err := s.stmt(ctx, leaseAcquireSQL)
	if err != nil {
		return lease.Lease{}, fmt.Errorf("acquire lease %q: %w", p.Job, err)
	}
	sel, err := s.stmt(ctx, leaseSelectSQL)
	if err != nil {
		return lease.Lease{}, fmt.Errorf("acquire lease %q: %w", p.Job, err)
	}
	// A refusal reads the holder in the same transaction, so that the
	// holder reported is the one that refused the write.
	var got, holder lease.Lease
	var refused bool
	err = s.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		got, err = sqlstore.ScanLease(p.Job, tx.StmtContext(ctx, upsert).QueryRowContext(ctx, args...).Scan)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		refused = true
		holder, err = sqlstore.ScanLease(p.Job, tx.StmtContext(ctx, sel).QueryRowContext(ctx, p.Job).Scan)
		if err != nil {
			return fmt.Errorf("read holder: %w", err)
		}
		return nil
	})
	switch {
	case err != nil:
		return lease.Lease{}, fmt.Errorf("acquire lease %q: %w", p.Job, err)
	case refused:
		return lease.Lease{}, &lease.HeldError{Holder: holder}
	}
	return got, nil
}

// Renew implements lease.Store.
func (s *LeaseStore) Renew(ctx context.Context, p lease.RenewParams) (lease.Lease, error) {
	if err := sqlstore.CheckLeaseParams(p.Job, p.Owner, p.TTL, p.Now); err != nil {
		return lease.Lease{}, fmt.Errorf("renew lease %q: %w", p.Job, err)
	}
	st, err := s.stmt(ctx, leaseRenewSQL)
	if err != nil {
		return lease.Lease{}, fmt.Errorf("renew lease %q: %w", p.Job, err)
	}
	var got lease.Lease
	var refused bool
	err = s.db.write(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		got, err = sqlstore.ScanLease(p.Job, tx.StmtContext(ctx, st).QueryRowContext(ctx, p.Job, p.Owner, p.Fence, toNanos(p.Now.Add(p.TTL)), toNanos(p.Now)).Scan)
		if errors.Is(err, sql.ErrNoRows) {
			refused, err = true, nil
		}
		return err
	})
	if refused {
		return lease.Lease{}, fmt.Errorf("renew lease %q by %q (fence %d): %w", p.Job, p.Owner, p.Fence, lease.ErrNotHolder)
	}
	if err != nil {
		return lease.Lease{}, fmt.Errorf("renew lease %q: %w", p.Job, err)
	}
	return got, nil
}

// Release implements lease.Store.
func (s *LeaseStore) Release(ctx context.Context, p lease.ReleaseParams) error {
	if err := sqlstore.CheckLeaseHolder(p.Job, p.Owner); err != nil {
		return fmt.Errorf("release lease %q: %w", p.Job, err)
	}
	st, err := s.stmt(ctx, leaseReleaseSQL)
	if err != nil {
		return fmt.Errorf("release lease %q: %w", p.Job, err)
	}
	var res sql.Result
	err = s.db.write(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		res, err = tx.StmtContext(ctx, st).ExecContext(ctx, p.Job, p.Owner, p.Fence)
		return err
	})
	if err != nil {
		return fmt.Errorf("release lease %q: %w", p.Job, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("release lease %q: %w", p.Job, err)
	}
	if n == 0 {
		return fmt.Errorf("release lease %q by %q (fence %d): %w", p.Job, p.Owner, p.Fence, lease.ErrNotHolder)
	}
	return nil
}

// Inspect implements lease.Store.
func (s *LeaseStore) Inspect(ctx context.Context, job string) (lease.Lease, error) {
	if job == "" {
		return lease.Lease{}, fmt.Errorf("inspect lease: empty job: %w", sqlstore.ErrLeaseParams)
	}
	st, err := s.stmt(ctx, leaseSelectSQL)
	if err != nil {
		return lease.Lease{}, fmt.Errorf("inspect lease %q: %w", job, err)
	}
	got, err := sqlstore.ScanLease(job, st.QueryRowContext(ctx, job).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return lease.Lease{}, fmt.Errorf("inspect lease %q: %w", job, lease.ErrNotFound)
	}
	if err != nil {
		return lease.Lease{}, fmt.Errorf("inspect lease %q: %w", job, err)
	}
	return got, nil
}

// stmt returns query prepared on the store's database, preparing it on
// first use. (Parsing is about half the cost of an unprepared write.)
func (s *LeaseStore) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.stmts[query]; ok {
		return st, nil
	}
	st, err := s.db.sql.PrepareContext(ctx, s.q(query))
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	s.stmts[query] = st
	return st, nil
}

// List returns every record of the store, by job (key): the operators'
// view of the application locks (baton lock list).
func (s *LeaseStore) List(ctx context.Context) ([]lease.Lease, error) {
	rows, err := s.db.sql.QueryContext(ctx, s.q(`SELECT job, `+sqlstore.LeaseColumns+` FROM leases ORDER BY job`))
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	defer rows.Close()
	var out []lease.Lease
	for rows.Next() {
		l, err := sqlstore.ScanListedLease(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("list leases: %w", err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	return out, nil
}
