package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/sqlstore"
)

// LeaseStore is lease.Store on the baton_leases table: one row per job,
// with an empty owner when free and the fence kept across releases.
//
// Acquire is one conditional INSERT … ON CONFLICT … DO UPDATE … WHERE,
// applied only when the row is free, expired at the caller's Now (with its
// skew allowance) or already the owner's; the row's own fence+1 is the new
// fence. It is sent in one batch with a read of the row: a refused upsert
// still locks the row, so the read returns the holder that refused it, in
// the same round trip. Renew and Release are one conditional UPDATE each.
//
// Sent again after an unknown outcome (a connection lost in flight):
// Acquire's re-run is the owner's own acquisition again, which the row
// allows (owner = excluded.owner) and which takes the next fence, so the
// fence the caller gets is the newest and never one another holder had;
// Renew's re-run applies again to the same effect; a Release re-run that
// finds the lease no longer the caller's reports success (it is not the
// caller's either way). RecordContention, a count for operators, is sent
// once: a re-run could count a refusal twice.
type LeaseStore struct {
	sqlstore.Pauses // lease.Pauser over statements
	db              *DB
	// names maps the table names in the queries to this store's: nil for
	// the jobs' leases; the lock tables for NewLockStore.
	names *strings.Replacer
}

var (
	_ lease.Store             = (*LeaseStore)(nil)
	_ lease.ContentionCounter = (*LeaseStore)(nil)
)

// NewLeaseStore returns the lease store of db.
func NewLeaseStore(db *DB) *LeaseStore {
	return &LeaseStore{Pauses: sqlstore.Pauses{DB: statements{db}}, db: db}
}

// NewLockStore returns the store of db's application locks (batonlock):
// the same records and operations as the jobs' leases, in the tables
// baton_locks and baton_lock_contention, so that no lock is ever a job's
// lease. A lock's key is its record's job. Its rows are never deleted, so
// a key's fence never goes back.
func NewLockStore(db *DB) *LeaseStore {
	return &LeaseStore{Pauses: sqlstore.Pauses{DB: statements{db}}, db: db, names: strings.NewReplacer("baton_lease_contention", "baton_lock_contention", "baton_leases", "baton_locks")}
}

// q returns query on this store's tables.
func (s *LeaseStore) q(query string) string {
	if s.names == nil {
		return query
	}
	return s.names.Replace(query)
}

const (
	leaseAcquireSQL = `
INSERT INTO baton_leases AS l (job, owner, fence, expires_at, acquired_at)
VALUES ($1, $2, 1, $3, $4)
ON CONFLICT (job) DO UPDATE SET
    owner       = excluded.owner,
    fence       = l.fence + 1,
    expires_at  = excluded.expires_at,
    acquired_at = excluded.acquired_at
WHERE l.owner = '' OR l.owner = excluded.owner OR l.expires_at <= $5
RETURNING ` + sqlstore.LeaseColumns

	leaseRenewSQL = `
UPDATE baton_leases SET expires_at = $4
WHERE job = $1 AND owner = $2 AND fence = $3 AND expires_at > $5
RETURNING ` + sqlstore.LeaseColumns

	leaseReleaseSQL = `UPDATE baton_leases SET owner = '', expires_at = 0 WHERE job = $1 AND owner = $2 AND fence = $3`

	leaseSelectSQL = `SELECT ` + sqlstore.LeaseColumns + ` FROM baton_leases WHERE job = $1`
)

// Acquire implements lease.Store.
func (s *LeaseStore) Acquire(ctx context.Context, p lease.AcquireParams) (lease.Lease, error) {
	if err := sqlstore.CheckLeaseParams(p.Job, p.Owner, p.TTL, p.Now); err != nil {
		return lease.Lease{}, fmt.Errorf("acquire lease %q: %w", p.Job, err)
	}
	now := toNanos(p.Now)
	var got, holder lease.Lease
	var refused bool
	err := s.db.batch(ctx, nil, func(b *pgx.Batch) {
		b.Queue(s.q(leaseAcquireSQL), p.Job, p.Owner, toNanos(p.Now.Add(p.TTL)), now, now-int64(p.Skew))
		b.Queue(s.q(leaseSelectSQL), p.Job)
	}, func(br pgx.BatchResults) error {
		var err error
		got, err = sqlstore.ScanLease(p.Job, br.QueryRow().Scan)
		refused = errors.Is(err, pgx.ErrNoRows)
		if err != nil && !refused {
			return err
		}
		holder, err = sqlstore.ScanLease(p.Job, br.QueryRow().Scan)
		return err
	})
	switch {
	case err != nil:
		return lease.Lease{}, fmt.Errorf("acquire lease %q: %w", p.Job, translate(err))
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
	got, err := sqlstore.ScanLease(p.Job, s.db.queryRow(ctx, nil, s.q(leaseRenewSQL), p.Job, p.Owner, p.Fence, toNanos(p.Now.Add(p.TTL)), toNanos(p.Now)).Scan)
	if errors.Is(err, pgx.ErrNoRows) {
		return lease.Lease{}, fmt.Errorf("renew lease %q by %q (fence %d): %w", p.Job, p.Owner, p.Fence, lease.ErrNotHolder)
	}
	if err != nil {
		return lease.Lease{}, fmt.Errorf("renew lease %q: %w", p.Job, translate(err))
	}
	return got, nil
}

// Release implements lease.Store.
func (s *LeaseStore) Release(ctx context.Context, p lease.ReleaseParams) error {
	if err := sqlstore.CheckLeaseHolder(p.Job, p.Owner); err != nil {
		return fmt.Errorf("release lease %q: %w", p.Job, err)
	}
	var a attempts
	tag, err := s.db.exec(ctx, &a, s.q(leaseReleaseSQL), p.Job, p.Owner, p.Fence)
	if err != nil {
		return fmt.Errorf("release lease %q: %w", p.Job, translate(err))
	}
	if tag.RowsAffected() == 0 && !a.unsure {
		return fmt.Errorf("release lease %q by %q (fence %d): %w", p.Job, p.Owner, p.Fence, lease.ErrNotHolder)
	}
	return nil
}

// Inspect implements lease.Store.
func (s *LeaseStore) Inspect(ctx context.Context, job string) (lease.Lease, error) {
	if job == "" {
		return lease.Lease{}, fmt.Errorf("inspect lease: empty job: %w", sqlstore.ErrLeaseParams)
	}
	got, err := sqlstore.ScanLease(job, s.db.queryRow(ctx, nil, s.q(leaseSelectSQL), job).Scan)
	if errors.Is(err, pgx.ErrNoRows) {
		return lease.Lease{}, fmt.Errorf("inspect lease %q: %w", job, lease.ErrNotFound)
	}
	if err != nil {
		return lease.Lease{}, fmt.Errorf("inspect lease %q: %w", job, translate(err))
	}
	return got, nil
}

// RecordContention implements lease.ContentionCounter: one UPSERT per
// refusal, so counts from several processes add up; the latest refusal
// by its caller's clock is the one kept as Last and Holder. It continues
// the streak when it names the streak's holder, and starts one otherwise
// (or on a row without one: streak_at 0, written before streaks were
// kept).
func (s *LeaseStore) RecordContention(ctx context.Context, job string, holder lease.Lease, now time.Time, ttl time.Duration) error {
	if job == "" {
		return errors.New("record contention: empty job")
	}
	_, err := s.db.exec(ctx, &attempts{sendOnce: true}, s.q(`
INSERT INTO baton_lease_contention AS c (job, count, last_at, holder, holder_fence, holder_until, streak_at, ttl)
VALUES ($1, 1, $2, $3, $4, $5, $2, $6)
ON CONFLICT (job) DO UPDATE SET
    count        = c.count + 1,
    streak_at    = CASE WHEN excluded.last_at < c.last_at THEN c.streak_at
                        WHEN c.streak_at > 0 AND excluded.holder = c.holder THEN c.streak_at
                        ELSE excluded.last_at END,
    ttl          = CASE WHEN excluded.last_at >= c.last_at THEN excluded.ttl ELSE c.ttl END,
    last_at      = CASE WHEN excluded.last_at >= c.last_at THEN excluded.last_at ELSE c.last_at END,
    holder       = CASE WHEN excluded.last_at >= c.last_at THEN excluded.holder ELSE c.holder END,
    holder_fence = CASE WHEN excluded.last_at >= c.last_at THEN excluded.holder_fence ELSE c.holder_fence END,
    holder_until = CASE WHEN excluded.last_at >= c.last_at THEN excluded.holder_until ELSE c.holder_until END`),
		job, toNanos(now), holder.Owner, holder.Fence, toNanos(holder.ExpiresAt), int64(ttl))
	if err != nil {
		return fmt.Errorf("record contention of %q: %w", job, translate(err))
	}
	return nil
}

// Contention implements lease.ContentionCounter.
func (s *LeaseStore) Contention(ctx context.Context, job string) (lease.Contention, error) {
	return sqlstore.ReadContention(job, func(dest ...any) (bool, error) {
		err := s.db.queryRow(ctx, nil, s.q(`SELECT `+sqlstore.ContentionColumns+` FROM baton_lease_contention WHERE job = $1`), job).Scan(dest...)
		return found(err)
	})
}

// List returns every record of the store, by job (key): the operators'
// view of the application locks (baton lock list).
func (s *LeaseStore) List(ctx context.Context) ([]lease.Lease, error) {
	rows, err := s.db.pool.Query(ctx, s.q(`SELECT job, `+sqlstore.LeaseColumns+` FROM baton_leases ORDER BY job COLLATE "C"`))
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", translate(err))
	}
	defer rows.Close()
	var out []lease.Lease
	for rows.Next() {
		l, err := sqlstore.ScanListedLease(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("list leases: %w", translate(err))
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list leases: %w", translate(err))
	}
	return out, nil
}
