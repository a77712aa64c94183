package awsdynamodb

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/batonhq/baton/internal/ledger"
)

// Item record attributes (pk ITEMS#<run id>, sk <asset>).
const (
	itemState      = "state"
	itemOwner      = "owner"
	itemAttempt    = "attempt"
	itemLeaseUntil = "lease_until"
	itemFence      = "fence"
	itemError      = "error"
	itemResult     = "result" // Binary; absent when empty
	itemCreatedAt  = "created_at"
	itemStartedAt  = "started_at"
	itemFinishedAt = "finished_at"
	itemUpdatedAt  = "updated_at"
	// The noted wait (ledger.Item.Wait; optional, item format 2: absent
	// in records of earlier versions, which show no next attempt).
	itemWaitAt      = "wait_at"      // Number, unix nanoseconds
	itemWaitLimit   = "wait_limit"   // absent for a retry delay
	itemWaitKey     = "wait_key"     // absent for an unkeyed limit or a retry delay
	itemWaitAttempt = "wait_attempt" // the attempt it was noted at
)

// reasonExhausted is the Error of an item Claim sent to DEAD.
const reasonExhausted = "attempts exhausted"

// itemStates are the values of the item states in expressions.
var itemStates = record{
	":running":   str(string(ledger.ItemRunning)),
	":succeeded": str(string(ledger.ItemSucceeded)),
	":failed":    str(string(ledger.ItemFailed)),
	":dead":      str(string(ledger.ItemDead)),
	":cancelled": str(string(ledger.ItemCancelled)),
}

// withStates returns values with the item states' placeholders added
// (":running", …); the write keeps only those its expressions use.
func withStates(values record) record {
	for n, v := range itemStates {
		values[n] = v
	}
	return values
}

// claimable returns the condition "FAILED, or RUNNING with a lease expired
// at :cutoff", each conjoined with extra when it is not empty. Conditions
// are written flat, as a disjunction of conjunctions without parentheses
// (AND binds tighter than OR): the emulator's expression parser spends
// about 60µs on every pair of parentheses, which tripled the time it took
// over a claim's condition. DynamoDB does not care.
func claimable(extra string) string {
	if extra != "" {
		extra = " AND " + extra
	}
	return "#state = :failed" + extra + " OR #state = :running AND #lease_until <= :cutoff" + extra
}

// Claim implements ledger.Store. It first puts the item's first RUNNING
// record with one PutItem conditioned on the item being absent, the
// common case, so a new item costs one write whose condition is the
// cheapest to evaluate. When that condition fails, the record that failed
// it decides (from the refusal on DynamoDB, from one consistent GetItem
// on a server that does not return it): ErrTerminal, ErrHeld, or, for a
// claimable item (FAILED, RUNNING with an expired lease), one UpdateItem
// whose condition covers every claimable case under MaxAttempts; for a
// claimable item out of attempts, one conditional write to DEAD instead.
// A refused UpdateItem is decided the same way from its record.
func (s *LedgerStore) Claim(ctx context.Context, p ledger.ClaimParams) (ledger.Item, error) {
	op := "claim " + p.Key.String()
	if err := validItemKey(p.Key); err != nil {
		return ledger.Item{}, fmt.Errorf("%s: %w", op, err)
	}
	k, err := s.itemKeyOf(ctx, p.Key)
	if err != nil {
		return ledger.Item{}, err
	}
	cutoff := num(toNanos(p.Now) - int64(p.Skew))
	claim := update{
		set: []string{
			"#state = :running",
			"#owner = :owner",
			"#lease_until = :until",
			"#fence = :fence",
			"#created_at = if_not_exists(#created_at, :now)",
			"#started_at = :now",
			"#updated_at = :now",
		},
		// ADD rather than SET if_not_exists(…) + 1: the same increment,
		// which the emulator's parser reads in a third of the time.
		add:  []string{"#attempt :one"},
		cond: "attribute_not_exists(#pk) OR " + claimable(""),
		values: record{
			":owner":  str(p.Owner),
			":one":    num(1),
			":until":  nanos(p.LeaseUntil),
			":fence":  num(p.Fence),
			":now":    nanos(p.Now),
			":cutoff": cutoff,
		},
	}
	if p.MaxAttempts > 0 {
		claim.cond = "attribute_not_exists(#pk) OR " + claimable("#attempt < :max")
		claim.values[":max"] = num(int64(p.MaxAttempts))
	}
	withStates(claim.values)
	w, err := s.t.put(ctx, op, k, firstClaim(p), "attribute_not_exists(#pk)", nil)
	for retries := 0; ; retries++ {
		if err != nil {
			return ledger.Item{}, err
		}
		if w.applied {
			it, err := decodeItem(p.Key, w.rec)
			if err != nil {
				return ledger.Item{}, fmt.Errorf("%s: %w", op, err)
			}
			return it, nil
		}
		// Decide from the record that failed the condition. Without one
		// (gone since), or when it is claimable again, claim again.
		next := claim
		if w.rec != nil {
			it, err := decodeItem(p.Key, w.rec)
			if err != nil {
				return ledger.Item{}, fmt.Errorf("%s: %w", op, err)
			}
			expired := !it.LeaseUntil.Add(p.Skew).After(p.Now)
			switch {
			case it.State.Terminal():
				return it, fmt.Errorf("%s: item is %s: %w", op, it.State, ledger.ErrTerminal)
			case it.State == ledger.ItemRunning && !expired:
				return it, fmt.Errorf("%s: running under %q (attempt %d) until %s: %w",
					op, it.Owner, it.Attempt, it.LeaseUntil.Format(time.RFC3339Nano), ledger.ErrHeld)
			case p.MaxAttempts > 0 && it.Attempt >= p.MaxAttempts:
				next = s.exhaust(p, cutoff)
			}
		}
		if retries == raceRetries {
			return ledger.Item{}, fmt.Errorf("%s: the item record kept changing under the write; try again", op)
		}
		w, err = s.t.update(ctx, op, k, next)
		if err == nil && w.applied && strAttr(w.rec, itemState) == string(ledger.ItemDead) {
			dead, err := decodeItem(p.Key, w.rec)
			if err != nil {
				return ledger.Item{}, fmt.Errorf("%s: %w", op, err)
			}
			return dead, fmt.Errorf("%s: %s after %d attempts: %w", op, reasonExhausted, dead.Attempt, ledger.ErrTerminal)
		}
	}
}

// firstClaim is the record of an item's first claim under p: what the
// claim UpdateItem writes on an absent item, but for the write token.
func firstClaim(p ledger.ClaimParams) record {
	now := nanos(p.Now)
	return record{
		itemState:      str(string(ledger.ItemRunning)),
		itemOwner:      str(p.Owner),
		itemAttempt:    num(1),
		itemLeaseUntil: nanos(p.LeaseUntil),
		itemFence:      num(p.Fence),
		itemCreatedAt:  now,
		itemStartedAt:  now,
		itemUpdatedAt:  now,
	}
}

// exhaust is the write that moves a claimable item whose attempts reached
// p.MaxAttempts to DEAD.
func (s *LedgerStore) exhaust(p ledger.ClaimParams, cutoff types.AttributeValue) update {
	u := update{
		set:  []string{"#state = :dead", "#error = :reason", "#finished_at = :now", "#updated_at = :now"},
		cond: claimable("#attempt >= :max"),
		values: record{
			":reason": str(reasonExhausted),
			":now":    nanos(p.Now),
			":cutoff": cutoff,
			":max":    num(int64(p.MaxAttempts)),
		},
	}
	s.terminal(&u, p.Now)
	withStates(u.values)
	return u
}

// terminal adds the ttl of a record that became terminal at now to u.
func (s *LedgerStore) terminal(u *update, now time.Time) {
	if ttl, ok := s.t.expiry(now); ok {
		u.set = append(u.set, "#ttl = :ttl")
		u.values[":ttl"] = ttl
	}
}

// Complete implements ledger.Store with one UpdateItem conditioned on
// RUNNING, owner and attempt.
func (s *LedgerStore) Complete(ctx context.Context, p ledger.CompleteParams) (ledger.Item, error) {
	u := update{
		set:    []string{"#state = :succeeded", "#finished_at = :now", "#updated_at = :now"},
		values: record{":now": nanos(p.Now)},
	}
	if len(p.Result) > 0 {
		u.set = append(u.set, "#result = :result")
		u.values[":result"] = &types.AttributeValueMemberB{Value: p.Result}
	} else {
		u.remove = append(u.remove, "#result")
	}
	s.terminal(&u, p.Now)
	return s.finishAttempt(ctx, "complete", p.Key, p.Owner, p.Attempt, u)
}

// Fail implements ledger.Store with one UpdateItem conditioned on RUNNING,
// owner and attempt.
func (s *LedgerStore) Fail(ctx context.Context, p ledger.FailParams) (ledger.Item, error) {
	u := update{
		set:    []string{"#state = :failed", "#updated_at = :now"},
		values: record{":now": nanos(p.Now)},
	}
	if p.Permanent || (p.MaxAttempts > 0 && p.Attempt >= p.MaxAttempts) {
		u.set[0] = "#state = :dead"
		u.set = append(u.set, "#finished_at = :now")
		s.terminal(&u, p.Now)
	}
	setReason(&u, p.Reason)
	return s.finishAttempt(ctx, "fail", p.Key, p.Owner, p.Attempt, u)
}

// Release implements ledger.Store with one UpdateItem conditioned on
// RUNNING, owner and attempt: the item lease ends at Now.
func (s *LedgerStore) Release(ctx context.Context, p ledger.ReleaseParams) (ledger.Item, error) {
	u := update{
		set:    []string{"#lease_until = :now", "#updated_at = :now"},
		values: record{":now": nanos(p.Now)},
	}
	return s.finishAttempt(ctx, "release", p.Key, p.Owner, p.Attempt, u)
}

// Extend implements ledger.Store with one UpdateItem conditioned on
// RUNNING, owner and attempt: the item lease ends at LeaseUntil.
func (s *LedgerStore) Extend(ctx context.Context, p ledger.ExtendParams) (ledger.Item, error) {
	u := update{
		set:    []string{"#lease_until = :lease_until", "#updated_at = :now"},
		values: record{":now": nanos(p.Now), ":lease_until": nanos(p.LeaseUntil)},
	}
	return s.finishAttempt(ctx, "extend", p.Key, p.Owner, p.Attempt, u)
}

// finishAttempt applies u to the item when it is RUNNING(owner, attempt),
// and maps a failed condition to the ledger's errors.
func (s *LedgerStore) finishAttempt(ctx context.Context, verb string, key ledger.ItemKey, owner string, attempt int, u update) (ledger.Item, error) {
	op := verb + " " + key.String()
	if err := validItemKey(key); err != nil {
		return ledger.Item{}, fmt.Errorf("%s: %w", op, err)
	}
	u.cond = "#state = :running AND #owner = :owner AND #attempt = :attempt"
	u.values[":owner"] = str(owner)
	u.values[":attempt"] = num(int64(attempt))
	withStates(u.values)
	k, err := s.itemKeyOf(ctx, key)
	if err != nil {
		return ledger.Item{}, err
	}
	w, err := s.t.update(ctx, op, k, u)
	if err != nil {
		return ledger.Item{}, err
	}
	if w.rec == nil {
		return ledger.Item{}, fmt.Errorf("%s: %w", op, ledger.ErrNotFound)
	}
	it, err := decodeItem(key, w.rec)
	if err != nil {
		return ledger.Item{}, fmt.Errorf("%s: %w", op, err)
	}
	switch {
	case w.applied:
		return it, nil
	case it.State.Terminal():
		return it, fmt.Errorf("%s: item is %s: %w", op, it.State, ledger.ErrTerminal)
	default:
		return it, fmt.Errorf("%s: item is %s under %q attempt %d, not %q attempt %d: %w",
			op, it.State, it.Owner, it.Attempt, owner, attempt, ledger.ErrConflict)
	}
}

// Cancel implements ledger.Store with one UpdateItem conditioned on the
// item being absent, RUNNING or FAILED.
func (s *LedgerStore) Cancel(ctx context.Context, p ledger.CancelParams) (ledger.Item, error) {
	op := "cancel " + p.Key.String()
	if err := validItemKey(p.Key); err != nil {
		return ledger.Item{}, fmt.Errorf("%s: %w", op, err)
	}
	u := update{
		set: []string{
			"#state = :cancelled",
			"#attempt = if_not_exists(#attempt, :zero)",
			"#created_at = if_not_exists(#created_at, :now)",
			"#finished_at = :now",
			"#updated_at = :now",
		},
		cond:   "attribute_not_exists(#pk) OR #state = :running OR #state = :failed",
		values: record{":zero": num(0), ":now": nanos(p.Now)},
	}
	setReason(&u, p.Reason)
	s.terminal(&u, p.Now)
	withStates(u.values)
	k, err := s.itemKeyOf(ctx, p.Key)
	if err != nil {
		return ledger.Item{}, err
	}
	for range raceRetries {
		it, applied, found, err := s.updateItem(ctx, op, k, p.Key, u)
		if err != nil {
			return ledger.Item{}, err
		}
		if !found {
			continue // gone since the failed condition: retry
		}
		if applied {
			return it, nil
		}
		if it.State.Terminal() {
			return it, fmt.Errorf("%s: item is %s: %w", op, it.State, ledger.ErrTerminal)
		}
		// Cancellable again since the failed condition: retry.
	}
	return ledger.Item{}, fmt.Errorf("%s: the item record kept changing under the write; try again", op)
}

var _ ledger.WaitNoter = (*LedgerStore)(nil)

// NoteWait implements ledger.WaitNoter with one UpdateItem conditioned on
// the item being FAILED (at p.Attempt unless unclaimed) or, unclaimed,
// absent: an absent item's record is made FAILED at attempt 0 by the
// same write (if_not_exists), its wait noted at attempt 0.
func (s *LedgerStore) NoteWait(ctx context.Context, p ledger.NoteWaitParams) (ledger.Item, error) {
	op := "note wait " + p.Key.String()
	if err := validItemKey(p.Key); err != nil {
		return ledger.Item{}, fmt.Errorf("%s: %w", op, err)
	}
	u := update{
		set: []string{
			"#state = :failed",
			"#attempt = if_not_exists(#attempt, :zero)",
			"#wait_attempt = if_not_exists(#attempt, :zero)",
			"#created_at = if_not_exists(#created_at, :now)",
			"#wait_at = :at",
			"#updated_at = :now",
		},
		cond:   "#state = :failed AND #attempt = :attempt",
		values: record{":zero": num(0), ":now": nanos(p.Now), ":at": nanos(p.Wait.At), ":attempt": num(int64(p.Attempt))},
	}
	if p.Unclaimed {
		u.cond = "attribute_not_exists(#pk) OR #state = :failed"
	}
	for attr, v := range map[string]string{itemWaitLimit: p.Wait.Limit, itemWaitKey: p.Wait.Key} {
		if v == "" {
			u.remove = append(u.remove, "#"+attr)
			continue
		}
		u.set = append(u.set, "#"+attr+" = :"+attr)
		u.values[":"+attr] = str(v)
	}
	withStates(u.values)
	k, err := s.itemKeyOf(ctx, p.Key)
	if err != nil {
		return ledger.Item{}, err
	}
	it, applied, found, err := s.updateItem(ctx, op, k, p.Key, u)
	if err != nil {
		return ledger.Item{}, err
	}
	if !found {
		return ledger.Item{}, fmt.Errorf("%s: %w", op, ledger.ErrNotFound)
	}
	switch {
	case applied:
		return it, nil
	case it.State.Terminal():
		return it, fmt.Errorf("%s: item is %s: %w", op, it.State, ledger.ErrTerminal)
	}
	return it, fmt.Errorf("%s: item is %s at attempt %d, not FAILED at %d: %w", op, it.State, it.Attempt, p.Attempt, ledger.ErrConflict)
}

// updateItem runs u on the record of item, at k, and decodes the record
// the write returns: the new one when applied, else the one that failed
// the condition; found is false when there is none.
func (s *LedgerStore) updateItem(ctx context.Context, op string, k key, item ledger.ItemKey, u update) (it ledger.Item, applied, found bool, err error) {
	w, err := s.t.update(ctx, op, k, u)
	if err != nil || w.rec == nil {
		return ledger.Item{}, false, false, err
	}
	if it, err = decodeItem(item, w.rec); err != nil {
		return ledger.Item{}, false, false, fmt.Errorf("%s: %w", op, err)
	}
	return it, w.applied, true, nil
}

// setReason sets the error attribute to reason, or removes it when empty.
func setReason(u *update, reason string) {
	if reason == "" {
		u.remove = append(u.remove, "#error")
		return
	}
	u.set = append(u.set, "#error = :reason")
	u.values[":reason"] = str(reason)
}

// GetItem implements ledger.Store with one consistent GetItem.
func (s *LedgerStore) GetItem(ctx context.Context, key ledger.ItemKey) (ledger.Item, error) {
	op := "get item " + key.String()
	if err := validItemKey(key); err != nil {
		return ledger.Item{}, fmt.Errorf("%s: %w", op, err)
	}
	k, err := s.itemKeyOf(ctx, key)
	if err != nil {
		return ledger.Item{}, err
	}
	rec, err := s.t.get(ctx, op, k)
	if err != nil {
		return ledger.Item{}, err
	}
	if rec == nil {
		return ledger.Item{}, fmt.Errorf("%s: %w", op, ledger.ErrNotFound)
	}
	it, err := decodeItem(key, rec)
	if err != nil {
		return ledger.Item{}, fmt.Errorf("%s: %w", op, err)
	}
	return it, nil
}

// ListItems implements ledger.Store with one consistent Query of the run's
// partition (more pages past 1 MB), in sort key (asset) order; for a run
// spread over partitions, one Query per partition, listPartsAtOnce at a
// time, merged in asset order.
func (s *LedgerStore) ListItems(ctx context.Context, run ledger.RunID) ([]ledger.Item, error) {
	op := "list items of " + run.String()
	if err := validRunID(run); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	l, err := s.partitions(ctx, run)
	if err != nil {
		return nil, err
	}
	parts := l.n
	if parts <= 1 {
		return s.listPartition(ctx, op, run, prefixItems+run.String(), "", "")
	}
	lists := make([][]ledger.Item, parts)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(listPartsAtOnce)
	for p := range parts {
		g.Go(func() (err error) {
			lists[p], err = s.listPartition(gctx, op, run, partPK(run, p), "", "")
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	items := slices.Concat(lists...)
	slices.SortFunc(items, func(a, b ledger.Item) int { return strings.Compare(a.Key.Asset, b.Key.Asset) })
	return items, nil
}

// listPartsAtOnce bounds the concurrent Queries of ListItems.
const listPartsAtOnce = 8

// listPartition reads the item records of the partition pk of run, those
// whose asset is between first and last when last is not "" (from the
// first when first is ""), in asset order.
func (s *LedgerStore) listPartition(ctx context.Context, op string, run ledger.RunID, pk, first, last string) ([]ledger.Item, error) {
	cond := "#pk = :pk"
	values := record{":pk": str(pk)}
	switch {
	case last != "" && first != "":
		cond += " AND #sk BETWEEN :first AND :last"
		values[":first"], values[":last"] = str(first), str(last)
	case last != "":
		cond += " AND #sk <= :last"
		values[":last"] = str(last)
	}
	recs, err := s.t.query(ctx, op, &dynamodb.QueryInput{
		TableName:                 aws.String(s.t.name),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  names(cond),
		ExpressionAttributeValues: values,
		ConsistentRead:            aws.Bool(true),
	}, 0)
	if err != nil {
		return nil, err
	}
	items := make([]ledger.Item, 0, len(recs))
	for _, rec := range recs {
		k, err := keyOf(rec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		it, err := decodeItem(ledger.ItemKey{Run: run, Asset: k.sk}, rec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		items = append(items, it)
	}
	return items, nil
}

// decodeItem reads the item record of key.
func decodeItem(key ledger.ItemKey, rec record) (ledger.Item, error) {
	d := decoder{rec: rec}
	it := ledger.Item{
		Key:        key,
		State:      ledger.ItemState(d.str(itemState)),
		Owner:      d.str(itemOwner),
		Attempt:    d.int(itemAttempt),
		LeaseUntil: d.time(itemLeaseUntil),
		Fence:      d.int64(itemFence),
		Error:      d.str(itemError),
		Result:     d.bytes(itemResult),
		CreatedAt:  d.time(itemCreatedAt),
		StartedAt:  d.time(itemStartedAt),
		FinishedAt: d.time(itemFinishedAt),
		UpdatedAt:  d.time(itemUpdatedAt),
		Wait: ledger.ItemWait{At: d.time(itemWaitAt), Limit: d.str(itemWaitLimit), Key: d.str(itemWaitKey),
			Attempt: d.int(itemWaitAttempt)},
	}
	if d.err != nil {
		return ledger.Item{}, fmt.Errorf("decode item record %s: %w", key, d.err)
	}
	return it, nil
}
