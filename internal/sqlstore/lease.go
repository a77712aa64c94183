package sqlstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/lease"
)

// ErrLeaseParams reports parameters the lease contract rules out.
var ErrLeaseParams = errors.New("invalid lease parameters")

// CheckLeaseHolder rejects an empty job or owner, which the contract
// calls invalid. (An empty owner would otherwise match a free row.)
func CheckLeaseHolder(job, owner string) error {
	switch {
	case job == "":
		return fmt.Errorf("empty job: %w", ErrLeaseParams)
	case owner == "":
		return fmt.Errorf("empty owner: %w", ErrLeaseParams)
	}
	return nil
}

// CheckLeaseParams also rejects a non-positive TTL (invalid by contract)
// and a zero Now, which has no expiry to add the TTL to.
func CheckLeaseParams(job, owner string, ttl time.Duration, now time.Time) error {
	if err := CheckLeaseHolder(job, owner); err != nil {
		return err
	}
	switch {
	case ttl <= 0:
		return fmt.Errorf("non-positive TTL %s: %w", ttl, ErrLeaseParams)
	case now.IsZero():
		return fmt.Errorf("zero Now: %w", ErrLeaseParams)
	}
	return nil
}

// LeaseColumns are the columns ScanLease reads, in its order.
const LeaseColumns = `owner, fence, expires_at, acquired_at`

// ScanLease scans LeaseColumns of job's lease record.
func ScanLease(job string, scan ScanFunc) (lease.Lease, error) {
	l := lease.Lease{Job: job}
	var expires, acquired int64
	if err := scan(&l.Owner, &l.Fence, &expires, &acquired); err != nil {
		return lease.Lease{}, err
	}
	l.ExpiresAt, l.AcquiredAt = Time(expires), Time(acquired)
	return l, nil
}

// ScanListedLease scans "job, " + LeaseColumns: a record of a listing.
func ScanListedLease(scan ScanFunc) (lease.Lease, error) {
	var job string
	l, err := ScanLease("", func(dest ...any) error { return scan(append([]any{&job}, dest...)...) })
	if err != nil {
		return lease.Lease{}, err
	}
	l.Job = job
	return l, nil
}

// ContentionColumns are the columns of a contention record that
// ReadContention reads, in its order.
const ContentionColumns = `count, last_at, holder, holder_fence, holder_until, streak_at, ttl`

// ReadContention returns job's contention record read by read (of
// ContentionColumns); Count is 0 when there is none. A streak_at of 0 (a
// row written before streaks were kept) is no streak start.
func ReadContention(job string, read ReadFunc) (lease.Contention, error) {
	r := lease.Contention{Job: job, Holder: lease.Lease{Job: job}}
	var last, until, streak, ttl int64
	found, err := read(&r.Count, &last, &r.Holder.Owner, &r.Holder.Fence, &until, &streak, &ttl)
	switch {
	case err != nil:
		return lease.Contention{}, fmt.Errorf("contention of %q: %w", job, err)
	case !found:
		return lease.Contention{Job: job, Holder: lease.Lease{Job: job}}, nil
	}
	r.Last, r.Holder.ExpiresAt, r.TTL = Time(last), Time(until), time.Duration(ttl)
	if streak > 0 {
		r.StreakStart = Time(streak)
	}
	return r, nil
}
