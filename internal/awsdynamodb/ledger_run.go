package awsdynamodb

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/batonhq/baton/internal/ledger"
)

// Run record attributes (pk RUN#<job>, sk <nominal>).
const (
	runGen    = "gen"
	runState  = "state"
	runCursor = "cursor"
	runTotal  = "total"
	runFence  = "fence"
	// runOpenFence is the fence of the write that opened the current
	// generation, valid only when runOpenFenceTok equals runOpenToken: a
	// record of an earlier version resumed by this one gets both attributes
	// from the resuming write, whose token is not the opening one, and so
	// reads as 0 (no lower bound known).
	runOpenFence    = "open_fence"
	runOpenFenceTok = "open_fence_tok"
	// runShards is the item shard count of the current generation, set by
	// the write that opens it. A record of an earlier version lacks it
	// (read as 0) until a resume by this version gives it the resumer's
	// count, which is harmless: nothing depends on the count before the
	// run is fanned out.
	runShards     = "shards"
	runOpenedAt   = "opened_at"
	runUpdatedAt  = "updated_at"
	runFinishedAt = "finished_at"
	runSucceeded  = "succeeded"
	runDead       = "dead"
	runCancelled  = "cancelled"
	// runDigest is the item list's digest of the current generation
	// (ledger.Run.Digest), valid only when runDigestTok equals
	// runOpenToken: a resume of a record opened without one (or by an
	// earlier version) may add both, with its own token, and the digest
	// then reads as "" (not known), never as the resumer's list. Absent
	// when the opening write had none.
	runDigest    = "digest"
	runDigestTok = "digest_tok"
	// runTrace is the trace id of the span that opened the current
	// generation (ledger.Run.TraceID), valid only when runTraceTok equals
	// runOpenToken, as runDigest. Absent when the opening write had none
	// (and on records written before it was kept: not known).
	runTrace    = "trace_id"
	runTraceTok = "trace_tok"
	// runOpenToken is the write token of the write that opened the current
	// generation: OpenRun tells Opened from Resumed by it.
	runOpenToken = "open_tok"
)

// OpenRun implements ledger.Store. Without Force it is one UpdateItem that
// creates generation 1 or resumes a fanning_out run with a fence at most
// the caller's; it tells the two apart by the token of the write that
// opened the generation. With Force it is a consistent GetItem and one
// UpdateItem conditioned on the generation read.
func (s *LedgerStore) OpenRun(ctx context.Context, p ledger.OpenRunParams) (ledger.Run, ledger.OpenOutcome, error) {
	p.Job, p.Nominal = ledger.TickOf(ledger.RunID{Job: p.Job, Nominal: p.Nominal, Submission: p.Submission})
	op := fmt.Sprintf("open run %s@%s", p.Job, timeSK(p.Nominal))
	if err := ledger.ValidTickJob(p.Job); err != nil {
		return ledger.Run{}, "", fmt.Errorf("%s: %w", op, err)
	}
	k := runKey(p.Job, p.Nominal)
	if p.Force {
		return s.forceRun(ctx, op, k, p)
	}
	u := update{
		set: []string{
			"#gen = if_not_exists(#gen, :one)",
			"#state = if_not_exists(#state, :fanning)",
			"#cursor = if_not_exists(#cursor, :zero)",
			"#total = if_not_exists(#total, :zero)",
			"#fence = :fence",
			"#opened_at = if_not_exists(#opened_at, :now)",
			"#updated_at = :now",
			"#open_tok = if_not_exists(#open_tok, :tok)",
			"#open_fence = if_not_exists(#open_fence, :fence)",
			"#open_fence_tok = if_not_exists(#open_fence_tok, :tok)",
			"#shards = if_not_exists(#shards, :shards)",
			"#parts = if_not_exists(#parts, :parts)",
			"#parts_tok = if_not_exists(#parts_tok, :tok)",
			"#parts_page = if_not_exists(#parts_page, :ppage)",
			"#parts_page_tok = if_not_exists(#parts_page_tok, :tok)",
		},
		cond: "attribute_not_exists(#pk) OR #state = :fanning AND #fence <= :fence", // AND binds tighter
		values: record{
			":one":     num(1),
			":zero":    num(0),
			":fanning": str(string(ledger.RunFanningOut)),
			":fence":   num(p.Fence),
			":now":     nanos(p.Now),
			":shards":  num(int64(max(p.Shards, 1))),
			":parts":   num(int64(s.t.partitionsFor(p.Shards))),
			":ppage":   num(boolNum(p.Pages)),
		},
	}
	if p.Digest != "" {
		u.set = append(u.set, "#digest = if_not_exists(#digest, :digest)", "#digest_tok = if_not_exists(#digest_tok, :tok)")
		u.values[":digest"] = str(p.Digest)
	}
	if p.TraceID != "" {
		u.set = append(u.set, "#trace_id = if_not_exists(#trace_id, :trace)", "#trace_tok = if_not_exists(#trace_tok, :tok)")
		u.values[":trace"] = str(p.TraceID)
	}
	for range raceRetries {
		w, err := s.t.update(ctx, op, k, u)
		if err != nil {
			return ledger.Run{}, "", err
		}
		if w.rec == nil {
			continue // the record read after the failed condition is gone: retry
		}
		run, err := decodeRun(w.rec)
		if err != nil {
			return ledger.Run{}, "", fmt.Errorf("%s: %w", op, err)
		}
		s.remember(w.rec, run)
		switch {
		case w.applied && strAttr(w.rec, runOpenToken) == tokenOf(w.rec):
			return s.indexed(ctx, op, run, ledger.Opened)
		case w.applied:
			return s.indexed(ctx, op, run, ledger.Resumed)
		case run.State != ledger.RunFanningOut:
			return run, ledger.AlreadyFannedOut, nil
		case run.Fence > p.Fence:
			return run, "", fmt.Errorf("%s: stored fence %d is above the caller's %d: %w", op, run.Fence, p.Fence, ledger.ErrConflict)
		}
		// fanning_out with a fence at most ours: the record changed between
		// the write and the read; retry.
	}
	return ledger.Run{}, "", fmt.Errorf("%s: the run record kept changing under the write; try again", op)
}

// indexed returns what OpenRun returns for run, once a submission's run
// is in the job's submission index (indexSubmission).
func (s *LedgerStore) indexed(ctx context.Context, op string, run ledger.Run, out ledger.OpenOutcome) (ledger.Run, ledger.OpenOutcome, error) {
	if run.ID.Submitted() {
		if err := s.indexSubmission(ctx, op, run); err != nil {
			return ledger.Run{}, "", err
		}
	}
	return run, out, nil
}

// forceRun opens the next generation of the tick: a consistent read of the
// current generation, then one write conditioned on it.
func (s *LedgerStore) forceRun(ctx context.Context, op string, k key, p ledger.OpenRunParams) (ledger.Run, ledger.OpenOutcome, error) {
	for range raceRetries {
		cur, err := s.t.get(ctx, op, k)
		if err != nil {
			return ledger.Run{}, "", err
		}
		u := update{
			set: []string{
				"#gen = :gen",
				"#state = :fanning",
				"#cursor = :zero",
				"#total = :zero",
				"#fence = :fence",
				"#opened_at = :now",
				"#updated_at = :now",
				"#finished_at = :zero",
				"#succeeded = :zero",
				"#dead = :zero",
				"#cancelled = :zero",
				"#open_tok = :tok",
				"#open_fence = :fence",
				"#open_fence_tok = :tok",
				"#shards = :shards",
				"#parts = :parts",
				"#parts_tok = :tok",
				"#parts_page = :ppage",
				"#parts_page_tok = :tok",
			},
			remove: []string{"#" + attrTTL},
			cond:   "attribute_not_exists(#pk)",
			values: record{
				":gen":     num(1),
				":zero":    num(0),
				":fanning": str(string(ledger.RunFanningOut)),
				":fence":   num(p.Fence),
				":now":     nanos(p.Now),
				":shards":  num(int64(max(p.Shards, 1))),
				":parts":   num(int64(s.t.partitionsFor(p.Shards))),
				":ppage":   num(boolNum(p.Pages)),
			},
		}
		if p.Digest != "" {
			u.set = append(u.set, "#digest = :digest", "#digest_tok = :tok")
			u.values[":digest"] = str(p.Digest)
		} else {
			u.remove = append(u.remove, "#digest", "#digest_tok")
		}
		if p.TraceID != "" {
			u.set = append(u.set, "#trace_id = :trace", "#trace_tok = :tok")
			u.values[":trace"] = str(p.TraceID)
		} else {
			u.remove = append(u.remove, "#trace_id", "#trace_tok")
		}
		if cur != nil {
			prev, err := decodeRun(cur)
			if err != nil {
				return ledger.Run{}, "", fmt.Errorf("%s: %w", op, err)
			}
			// The superseded generation's partition count stays in the
			// record, for its items' late messages.
			u.set = append(u.set, "#"+runPartsOf+strconv.Itoa(prev.ID.Generation)+" = :prevparts")
			u.values[":prevparts"] = num(int64(max(prev.Partitions, 1)))
			u.set = append(u.set, "#"+runPartsPageOf+strconv.Itoa(prev.ID.Generation)+" = :prevppage")
			u.values[":prevppage"] = num(boolNum(prev.Pages))
			u.cond = "#gen = :prev"
			u.values[":prev"] = num(int64(prev.ID.Generation))
			u.values[":gen"] = num(int64(prev.ID.Generation) + 1)
		}
		w, err := s.t.update(ctx, op, k, u)
		if err != nil {
			return ledger.Run{}, "", err
		}
		if w.applied {
			run, err := decodeRun(w.rec)
			if err != nil {
				return ledger.Run{}, "", fmt.Errorf("%s: %w", op, err)
			}
			s.remember(w.rec, run)
			return s.indexed(ctx, op, run, ledger.Opened)
		}
		// Another writer changed the generation since the read: read again.
	}
	return ledger.Run{}, "", fmt.Errorf("%s: the run's generation kept changing under the forced write; try again", op)
}

// AdvanceRun implements ledger.Store with one conditional UpdateItem.
func (s *LedgerStore) AdvanceRun(ctx context.Context, p ledger.AdvanceRunParams) (ledger.Run, error) {
	op := "advance run " + p.ID.String()
	if err := validRunID(p.ID); err != nil {
		return ledger.Run{}, fmt.Errorf("%s: %w", op, err)
	}
	if p.Cursor < 0 {
		return ledger.Run{}, fmt.Errorf("%s: negative cursor %d", op, p.Cursor)
	}
	u := update{
		set:  []string{"#cursor = :cursor", "#fence = :fence", "#updated_at = :now"},
		cond: "#gen = :gen AND #state = :fanning AND #fence <= :fence AND #cursor <= :cursor",
		values: record{
			":cursor":  num(int64(p.Cursor)),
			":fence":   num(p.Fence),
			":now":     nanos(p.Now),
			":gen":     num(int64(p.ID.Generation)),
			":fanning": str(string(ledger.RunFanningOut)),
		},
	}
	if p.Done {
		u.set = append(u.set, "#state = :fanned", "#total = :cursor")
		u.values[":fanned"] = str(string(ledger.RunFannedOut))
	}
	w, err := s.t.update(ctx, op, runKey(ledger.TickOf(p.ID)), u)
	if err != nil {
		return ledger.Run{}, err
	}
	if w.rec == nil {
		return ledger.Run{}, fmt.Errorf("%s: %w", op, ledger.ErrNotFound)
	}
	run, err := decodeRun(w.rec)
	if err != nil {
		return ledger.Run{}, fmt.Errorf("%s: %w", op, err)
	}
	if !w.applied {
		return run, fmt.Errorf("%s: stored run is generation %d, %s, fence %d, cursor %d: %w",
			op, run.ID.Generation, run.State, run.Fence, run.Cursor, ledger.ErrConflict)
	}
	return run, nil
}

// FinishRun implements ledger.Store with one conditional UpdateItem. The
// finished record gets a ttl (see Options.Retention).
func (s *LedgerStore) FinishRun(ctx context.Context, p ledger.FinishRunParams) (ledger.Run, error) {
	op := "finish run " + p.ID.String()
	if err := validRunID(p.ID); err != nil {
		return ledger.Run{}, fmt.Errorf("%s: %w", op, err)
	}
	state := ledger.RunComplete
	if p.Dead+p.Cancelled > 0 {
		state = ledger.RunPartial
	}
	u := update{
		set: []string{
			"#state = :state", "#succeeded = :succeeded", "#dead = :dead", "#cancelled = :cancelled",
			"#finished_at = :now", "#updated_at = :now",
		},
		cond: "#gen = :gen AND #state = :fanned",
		values: record{
			":state":     str(string(state)),
			":succeeded": num(int64(p.Succeeded)),
			":dead":      num(int64(p.Dead)),
			":cancelled": num(int64(p.Cancelled)),
			":now":       nanos(p.Now),
			":gen":       num(int64(p.ID.Generation)),
			":fanned":    str(string(ledger.RunFannedOut)),
		},
	}
	if ttl, ok := s.t.expiry(p.Now); ok {
		u.set = append(u.set, "#ttl = :ttl")
		u.values[":ttl"] = ttl
	}
	w, err := s.t.update(ctx, op, runKey(ledger.TickOf(p.ID)), u)
	if err != nil {
		return ledger.Run{}, err
	}
	if w.rec == nil {
		return ledger.Run{}, fmt.Errorf("%s: %w", op, ledger.ErrNotFound)
	}
	run, err := decodeRun(w.rec)
	if err != nil {
		return ledger.Run{}, fmt.Errorf("%s: %w", op, err)
	}
	switch {
	case w.applied:
		return run, nil
	case run.ID.Generation == p.ID.Generation && run.State.Finished():
		return run, fmt.Errorf("%s: already %s: %w", op, run.State, ledger.ErrTerminal)
	default:
		return run, fmt.Errorf("%s: stored run is generation %d, %s: %w", op, run.ID.Generation, run.State, ledger.ErrConflict)
	}
}

// GetRun implements ledger.Store with one consistent GetItem.
func (s *LedgerStore) GetRun(ctx context.Context, job string, nominal time.Time) (ledger.Run, error) {
	op := fmt.Sprintf("get run %s@%s", job, timeSK(nominal))
	if err := ledger.ValidTickJob(job); err != nil {
		return ledger.Run{}, fmt.Errorf("%s: %w", op, err)
	}
	rec, err := s.t.get(ctx, op, runKey(job, nominal))
	if err != nil {
		return ledger.Run{}, err
	}
	if rec == nil {
		return ledger.Run{}, fmt.Errorf("%s: %w", op, ledger.ErrNotFound)
	}
	run, err := decodeRun(rec)
	if err != nil {
		return ledger.Run{}, fmt.Errorf("%s: %w", op, err)
	}
	s.remember(rec, run)
	return run, nil
}

// ListRuns implements ledger.Store: one consistent Query of the job's
// partition, newest sort key (nominal time) first.
func (s *LedgerStore) ListRuns(ctx context.Context, p ledger.ListRunsParams) ([]ledger.Run, error) {
	op := "list runs of " + p.Job
	if err := ledger.ValidName("job", p.Job); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 20
	}
	cond := "#pk = :pk"
	values := record{":pk": str(prefixRun + p.Job)}
	if !p.Before.IsZero() {
		cond += " AND #sk < :before"
		values[":before"] = str(beforeSK(p.Before))
	}
	recs, err := s.t.query(ctx, op, &dynamodb.QueryInput{
		TableName:                 aws.String(s.t.name),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  names(cond),
		ExpressionAttributeValues: values,
		ScanIndexForward:          aws.Bool(false),
		ConsistentRead:            aws.Bool(true),
	}, limit)
	if err != nil {
		return nil, err
	}
	runs := make([]ledger.Run, 0, len(recs))
	for _, rec := range recs {
		run, err := decodeRun(rec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		s.remember(rec, run)
		runs = append(runs, run)
	}
	return runs, nil
}

// decodeRun reads a run record, its id from its key.
func decodeRun(rec record) (ledger.Run, error) {
	k, err := keyOf(rec)
	if err != nil {
		return ledger.Run{}, fmt.Errorf("decode run record: %w", err)
	}
	job, err := trimPrefix(k.pk, prefixRun)
	if err != nil {
		return ledger.Run{}, fmt.Errorf("decode run record: %w", err)
	}
	nominal, err := parseTimeSK(k.sk)
	if err != nil {
		return ledger.Run{}, fmt.Errorf("decode run record: %w", err)
	}
	d := decoder{rec: rec}
	run := ledger.Run{
		ID:         ledger.RunIDOf(job, nominal, d.int(runGen)),
		State:      ledger.RunState(d.str(runState)),
		Cursor:     d.int(runCursor),
		Total:      d.int(runTotal),
		Fence:      d.int64(runFence),
		OpenFence:  d.int64(runOpenFence),
		Shards:     d.int(runShards),
		OpenedAt:   d.time(runOpenedAt),
		UpdatedAt:  d.time(runUpdatedAt),
		FinishedAt: d.time(runFinishedAt),
		Succeeded:  d.int(runSucceeded),
		Dead:       d.int(runDead),
		Cancelled:  d.int(runCancelled),
	}
	if d.err != nil {
		return ledger.Run{}, fmt.Errorf("decode run record %s: %w", k, d.err)
	}
	if strAttr(rec, runOpenFenceTok) != strAttr(rec, runOpenToken) {
		run.OpenFence = 0
	}
	if strAttr(rec, runDigestTok) == strAttr(rec, runOpenToken) {
		run.Digest = strAttr(rec, runDigest)
	}
	if strAttr(rec, runTraceTok) == strAttr(rec, runOpenToken) {
		run.TraceID = strAttr(rec, runTrace)
	}
	if n, ok := numAttr(rec, runParts); ok && n > 1 && strAttr(rec, runPartsTok) == strAttr(rec, runOpenToken) {
		run.Partitions = int(n) // 1 reads as 0, as on stores that do not partition
		byPage, _ := numAttr(rec, runPartsPage)
		run.Pages = byPage == 1 && strAttr(rec, runPartsPageTok) == strAttr(rec, runOpenToken)
	}
	return run, nil
}

// boolNum is b as a stored number: 1 or 0.
func boolNum(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
