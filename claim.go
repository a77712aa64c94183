package baton

import (
	"context"
	"errors"
	"time"
)

// Claim is a task's hold on its item, renewed with Heartbeat.
type Claim interface {
	Heartbeat(ctx context.Context) error // extends it by one item lease; ErrCancelled, ErrClaimLost: stop
	Until() time.Time                    // when it ends unless renewed
}

// Errors of Claim.Heartbeat, and causes of the processor's context.
var (
	ErrCancelled = errors.New("item cancelled") // the item was cancelled
	ErrClaimLost = errors.New("claim lost")     // another attempt took the item over
)
