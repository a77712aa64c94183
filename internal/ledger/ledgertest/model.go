package ledgertest

import (
	"bytes"
	"slices"
	"time"

	"github.com/batonhq/baton/internal/ledger"
)

// The item state machine of the design notes as pure functions: each takes
// the record before the call (nil: absent) and the call's parameters, and
// returns the record after it (nil: still absent) and the sentinel the
// store must return (nil on success). They are the oracle of the
// state-machine test; they never touch a store.
//
//	(absent) ─claim→ RUNNING(owner, attempt, lease_until)
//	RUNNING ─complete(owner, attempt)→ SUCCEEDED            (terminal)
//	RUNNING ─fail(owner, attempt)→ FAILED(error, attempts) ─claim→ RUNNING
//	RUNNING ─fail at max attempts→ DEAD                     (terminal)
//	RUNNING(lease expired) ─claim by another→ RUNNING(new owner, attempt+1)
//	any non-terminal ─cancel→ CANCELLED                     (terminal)

// attemptsExhausted is the Error of an item that Claim sent to DEAD.
const attemptsExhausted = "attempts exhausted"

// modelClaim is Store.Claim.
func modelClaim(cur *ledger.Item, p ledger.ClaimParams) (*ledger.Item, error) {
	if cur == nil {
		return &ledger.Item{
			Key:        p.Key,
			State:      ledger.ItemRunning,
			Owner:      p.Owner,
			Attempt:    1,
			LeaseUntil: p.LeaseUntil,
			Fence:      p.Fence,
			CreatedAt:  p.Now,
			StartedAt:  p.Now,
			UpdatedAt:  p.Now,
		}, nil
	}
	next := cloneItem(*cur)
	switch {
	case cur.State.Terminal():
		return next, ledger.ErrTerminal
	case cur.State == ledger.ItemRunning && cur.LeaseUntil.Add(p.Skew).After(p.Now):
		return next, ledger.ErrHeld
	case cur.State != ledger.ItemRunning && cur.State != ledger.ItemFailed:
		return next, ledger.ErrConflict // unknown state: never claimable
	}
	next.UpdatedAt = p.Now
	if p.MaxAttempts > 0 && cur.Attempt >= p.MaxAttempts {
		next.State = ledger.ItemDead
		next.Error = attemptsExhausted
		next.FinishedAt = p.Now
		return next, ledger.ErrTerminal
	}
	next.State = ledger.ItemRunning
	next.Owner = p.Owner
	next.Attempt = cur.Attempt + 1
	next.LeaseUntil = p.LeaseUntil
	next.Fence = p.Fence
	next.StartedAt = p.Now
	return next, nil
}

// modelHolder checks the condition Complete, Fail and Release share: the
// item is RUNNING under owner and attempt. It returns a copy of the record
// to change, or the record and sentinel to return when the condition fails.
func modelHolder(cur *ledger.Item, owner string, attempt int) (*ledger.Item, error) {
	switch {
	case cur == nil:
		return nil, ledger.ErrNotFound
	case cur.State.Terminal():
		return cloneItem(*cur), ledger.ErrTerminal
	case cur.State != ledger.ItemRunning || cur.Owner != owner || cur.Attempt != attempt:
		return cloneItem(*cur), ledger.ErrConflict
	}
	return cloneItem(*cur), nil
}

// modelComplete is Store.Complete.
func modelComplete(cur *ledger.Item, p ledger.CompleteParams) (*ledger.Item, error) {
	next, err := modelHolder(cur, p.Owner, p.Attempt)
	if err != nil {
		return next, err
	}
	next.State = ledger.ItemSucceeded
	next.Result = bytes.Clone(p.Result)
	next.FinishedAt = p.Now
	next.UpdatedAt = p.Now
	return next, nil
}

// modelFail is Store.Fail.
func modelFail(cur *ledger.Item, p ledger.FailParams) (*ledger.Item, error) {
	next, err := modelHolder(cur, p.Owner, p.Attempt)
	if err != nil {
		return next, err
	}
	next.State = ledger.ItemFailed
	if p.Permanent || (p.MaxAttempts > 0 && p.Attempt >= p.MaxAttempts) {
		next.State = ledger.ItemDead
		next.FinishedAt = p.Now
	}
	next.Error = p.Reason
	next.UpdatedAt = p.Now
	return next, nil
}

// modelRelease is Store.Release.
func modelRelease(cur *ledger.Item, p ledger.ReleaseParams) (*ledger.Item, error) {
	next, err := modelHolder(cur, p.Owner, p.Attempt)
	if err != nil {
		return next, err
	}
	next.LeaseUntil = p.Now
	next.UpdatedAt = p.Now
	return next, nil
}

// modelExtend is Store.Extend.
func modelExtend(cur *ledger.Item, p ledger.ExtendParams) (*ledger.Item, error) {
	next, err := modelHolder(cur, p.Owner, p.Attempt)
	if err != nil {
		return next, err
	}
	next.LeaseUntil = p.LeaseUntil
	next.UpdatedAt = p.Now
	return next, nil
}

// modelCancel is Store.Cancel.
func modelCancel(cur *ledger.Item, p ledger.CancelParams) (*ledger.Item, error) {
	if cur == nil {
		return &ledger.Item{
			Key:        p.Key,
			State:      ledger.ItemCancelled,
			Error:      p.Reason,
			CreatedAt:  p.Now,
			FinishedAt: p.Now,
			UpdatedAt:  p.Now,
		}, nil
	}
	next := cloneItem(*cur)
	if cur.State.Terminal() {
		return next, ledger.ErrTerminal
	}
	next.State = ledger.ItemCancelled
	next.Error = p.Reason
	next.FinishedAt = p.Now
	next.UpdatedAt = p.Now
	return next, nil
}

// modelNoteWait is WaitNoter.NoteWait.
func modelNoteWait(cur *ledger.Item, p ledger.NoteWaitParams) (*ledger.Item, error) {
	w := p.Wait
	if cur == nil {
		if !p.Unclaimed {
			return nil, ledger.ErrNotFound
		}
		w.Attempt = 0
		return &ledger.Item{Key: p.Key, State: ledger.ItemFailed, CreatedAt: p.Now, UpdatedAt: p.Now, Wait: w}, nil
	}
	next := cloneItem(*cur)
	switch {
	case cur.State.Terminal():
		return next, ledger.ErrTerminal
	case cur.State != ledger.ItemFailed, !p.Unclaimed && cur.Attempt != p.Attempt:
		return next, ledger.ErrConflict
	}
	w.Attempt = cur.Attempt
	next.Wait = w
	next.UpdatedAt = p.Now
	return next, nil
}

func cloneItem(it ledger.Item) *ledger.Item {
	it.Result = bytes.Clone(it.Result)
	return &it
}

// itemView returns the fields of it that the Store contract defines, in
// a form require.Equal can compare across adapters: times in UTC, an empty
// Result as nil, LeaseUntil only while RUNNING (it means nothing after),
// and Error not while RUNNING (a reclaimed item may or may not keep its
// last failure reason).
func itemView(it ledger.Item) ledger.Item {
	it.Key.Run.Nominal = utc(it.Key.Run.Nominal)
	it.LeaseUntil = utc(it.LeaseUntil)
	it.CreatedAt = utc(it.CreatedAt)
	it.StartedAt = utc(it.StartedAt)
	it.FinishedAt = utc(it.FinishedAt)
	it.UpdatedAt = utc(it.UpdatedAt)
	it.Wait.At = utc(it.Wait.At)
	if len(it.Result) == 0 {
		it.Result = nil
	} else {
		it.Result = slices.Clone(it.Result)
	}
	if it.State != ledger.ItemRunning {
		it.LeaseUntil = time.Time{}
	} else {
		it.Error = ""
	}
	return it
}

// runView is itemView for runs: times in UTC.
func runView(r ledger.Run) ledger.Run {
	r.ID.Nominal = utc(r.ID.Nominal)
	r.OpenedAt = utc(r.OpenedAt)
	r.UpdatedAt = utc(r.UpdatedAt)
	r.FinishedAt = utc(r.FinishedAt)
	return r
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}
