package awsdynamodb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/lease"
)

// Lease record attributes (pk LEASE#<job>, sk LEASE). A free lease has no
// owner attribute and expires_at 0; the fence is kept across releases.
const (
	leaseOwner      = "owner"
	leaseFence      = "fence"
	leaseExpiresAt  = "expires_at"  // unix nanoseconds
	leaseAcquiredAt = "acquired_at" // unix nanoseconds
)

// LeaseStore is a lease.Store on a DynamoDB table.
type LeaseStore struct {
	t table
	// keys name the records: the jobs' leases (leaseKeys) or the
	// application locks (lockKeys).
	keys leaseKeys
}

// leaseKeys name a lease store's records.
type leaseKeys struct {
	lease      func(job string) key
	contention func(job string) key
}

// jobLeaseKeys are the jobs' leases: LEASE#<job> LEASE, CONTENTION#<job>
// CONTENTION.
var jobLeaseKeys = leaseKeys{lease: leaseKey, contention: contentionKey}

// lockKeys are the application locks (batonlock): LOCK#<key> LOCK, and
// their contention in the same partition, LOCK#<key> CONTENTION. No other
// record kind has the prefix, so no lock is a job's lease.
var lockKeys = leaseKeys{
	lease:      func(k string) key { return key{prefixLock + k, skLock} },
	contention: func(k string) key { return key{prefixLock + k, skContention} },
}

var _ lease.Store = (*LeaseStore)(nil)

// NewLeaseStore returns a lease store on the table called table, which must
// have the key schema CreateTable makes.
func NewLeaseStore(client API, table string, o *Options) *LeaseStore {
	return &LeaseStore{t: newTable(client, table, o), keys: jobLeaseKeys}
}

// NewLockStore returns the store of the table's application locks
// (batonlock): the same records and operations as the jobs' leases, under
// the partition keys LOCK#<key>, which no other record kind uses. Lock
// records carry no ttl attribute: they are never deleted, so a key's
// fence never goes back.
func NewLockStore(client API, table string, o *Options) *LeaseStore {
	return &LeaseStore{t: newTable(client, table, o), keys: lockKeys}
}

// Acquire implements lease.Store. It is one UpdateItem that mints the
// fence (if_not_exists(fence, 0) + 1) in the same write that takes the
// lease, conditioned on the lease being absent, free, expired at Now-Skew,
// or held by Owner. On contention DynamoDB returns the holder's record with
// the failed condition; a server that does not costs one more consistent
// GetItem.
func (s *LeaseStore) Acquire(ctx context.Context, p lease.AcquireParams) (lease.Lease, error) {
	op := "acquire lease " + p.Job
	if err := checkLeaseParams(p.Job, p.Owner, p.TTL); err != nil {
		return lease.Lease{}, fmt.Errorf("%s: %w", op, err)
	}
	u := update{
		set: []string{
			"#fence = if_not_exists(#fence, :zero) + :one",
			"#owner = :owner",
			"#expires_at = :expires",
			"#acquired_at = :now",
		},
		cond: "attribute_not_exists(#pk) OR attribute_not_exists(#owner) OR #expires_at <= :cutoff OR #owner = :owner",
		values: record{
			":zero":    num(0),
			":one":     num(1),
			":owner":   str(p.Owner),
			":expires": nanos(p.Now.Add(p.TTL)),
			":now":     nanos(p.Now),
			":cutoff":  num(toNanos(p.Now) - int64(p.Skew)),
		},
	}
	for range raceRetries {
		w, err := s.t.update(ctx, op, s.keys.lease(p.Job), u)
		if err != nil {
			return lease.Lease{}, err
		}
		l, err := decodeLease(p.Job, w.rec)
		if err != nil {
			return lease.Lease{}, fmt.Errorf("%s: %w", op, err)
		}
		if w.applied {
			return l, nil
		}
		if w.rec != nil && l.Owner != p.Owner && l.Held(p.Now, p.Skew) {
			return lease.Lease{}, fmt.Errorf("%s: %w", op, &lease.HeldError{Holder: l})
		}
		// The record read after the failed condition is free again: retry.
	}
	return lease.Lease{}, fmt.Errorf("%s: the lease record kept changing under the write; try again", op)
}

// Renew implements lease.Store: one UpdateItem conditioned on owner, fence
// and an expiry after Now.
func (s *LeaseStore) Renew(ctx context.Context, p lease.RenewParams) (lease.Lease, error) {
	op := "renew lease " + p.Job
	if err := checkLeaseParams(p.Job, p.Owner, p.TTL); err != nil {
		return lease.Lease{}, fmt.Errorf("%s: %w", op, err)
	}
	w, err := s.t.update(ctx, op, s.keys.lease(p.Job), update{
		set:  []string{"#expires_at = :expires"},
		cond: "#owner = :owner AND #fence = :fence AND #expires_at > :now",
		values: record{
			":owner":   str(p.Owner),
			":fence":   num(p.Fence),
			":expires": nanos(p.Now.Add(p.TTL)),
			":now":     nanos(p.Now),
		},
	})
	if err != nil {
		return lease.Lease{}, err
	}
	if !w.applied {
		return lease.Lease{}, fmt.Errorf("%s: owner %q fence %d: %w", op, p.Owner, p.Fence, lease.ErrNotHolder)
	}
	l, err := decodeLease(p.Job, w.rec)
	if err != nil {
		return lease.Lease{}, fmt.Errorf("%s: %w", op, err)
	}
	return l, nil
}

// Release implements lease.Store: one UpdateItem conditioned on owner and
// fence that removes the owner and keeps the fence.
func (s *LeaseStore) Release(ctx context.Context, p lease.ReleaseParams) error {
	op := "release lease " + p.Job
	if err := checkLeaseParams(p.Job, p.Owner, time.Nanosecond); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	w, err := s.t.update(ctx, op, s.keys.lease(p.Job), update{
		set:    []string{"#expires_at = :zero"},
		remove: []string{"#owner"},
		cond:   "#owner = :owner AND #fence = :fence",
		values: record{
			":owner": str(p.Owner),
			":fence": num(p.Fence),
			":zero":  num(0),
		},
	})
	if err != nil {
		return err
	}
	if !w.applied {
		return fmt.Errorf("%s: owner %q fence %d: %w", op, p.Owner, p.Fence, lease.ErrNotHolder)
	}
	return nil
}

// Inspect implements lease.Store with one consistent GetItem.
func (s *LeaseStore) Inspect(ctx context.Context, job string) (lease.Lease, error) {
	op := "inspect lease " + job
	if job == "" {
		return lease.Lease{}, fmt.Errorf("%s: %w", op, errEmptyJob)
	}
	rec, err := s.t.get(ctx, op, s.keys.lease(job))
	if err != nil {
		return lease.Lease{}, err
	}
	if rec == nil {
		return lease.Lease{}, fmt.Errorf("%s: %w", op, lease.ErrNotFound)
	}
	l, err := decodeLease(job, rec)
	if err != nil {
		return lease.Lease{}, fmt.Errorf("%s: %w", op, err)
	}
	return l, nil
}

var errEmptyJob = errors.New("empty job name")

// checkLeaseParams reports what is wrong with the inputs of a lease call.
// Any non-empty job name is a valid key (LEASE#<job>); DynamoDB bounds its
// length (2 KB).
func checkLeaseParams(job, owner string, ttl time.Duration) error {
	switch {
	case job == "":
		return errEmptyJob
	case owner == "":
		return errors.New("empty owner")
	case ttl <= 0:
		return fmt.Errorf("TTL must be positive, got %s", ttl)
	}
	return nil
}

// decodeLease reads a lease record; nil reads as the zero lease of job.
func decodeLease(job string, rec record) (lease.Lease, error) {
	d := decoder{rec: rec}
	l := lease.Lease{
		Job:        job,
		Owner:      d.str(leaseOwner),
		Fence:      d.int64(leaseFence),
		ExpiresAt:  d.time(leaseExpiresAt),
		AcquiredAt: d.time(leaseAcquiredAt),
	}
	if d.err != nil {
		return lease.Lease{}, fmt.Errorf("decode lease record: %w", d.err)
	}
	return l, nil
}
