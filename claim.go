package baton

import (
	"context"
	"errors"
	"time"
)

// Claim is a task's hold on its item: the item is RUNNING under this
// attempt until Until, and no other consumer takes it over before then.
// An item that takes longer than its lease (Limits.ItemLease, or
// Derived.Lease) renews it with Heartbeat while it works.
//
// The runtime also checks the claim on its own, every third of the item's
// lease while the processor runs, with one read of the item (skipped when
// a heartbeat was made within that time): this check does not renew the
// lease, but a cancelled item (`baton cancel`) or a claim taken over ends
// the processor's context within a third of a lease even when the
// processor never calls Heartbeat.
type Claim interface {
	// Heartbeat extends the claim to one item lease from now, in one
	// conditional write on the item (a RUNNING item of this attempt), and
	// on AWS extends the SQS message's visibility with it. The claim never
	// extends past the invocation's deadline less the job's
	// DeadlineMargin: on Lambda a heartbeat cannot outlive the function's
	// timeout, so a processor that needs longer than that needs a longer
	// function timeout (baton checks the template's against the job's
	// limits). Heartbeat returns nil once the claim reached that cap.
	//
	// When the item was cancelled it returns an error matching
	// ErrCancelled; when another attempt took the item over or it ended
	// elsewhere, one matching ErrClaimLost. Either way it also cancels the
	// processor's context with that error as its cause: the processor
	// should stop, and its result would be refused. Other errors (a
	// store that did not answer) leave the claim as it was; the processor
	// may go on and try again.
	Heartbeat(ctx context.Context) error
	// Until returns when the claim ends unless renewed.
	Until() time.Time
}

// Errors of Claim.Heartbeat, and causes of the processor's context
// (context.Cause).
var (
	// ErrCancelled: the item was cancelled (by an operator, a run budget,
	// or fan-in after an input ended without success).
	ErrCancelled = errors.New("item cancelled")
	// ErrClaimLost: another attempt took the item over (the claim had
	// expired), or the item ended elsewhere.
	ErrClaimLost = errors.New("claim lost")
)
