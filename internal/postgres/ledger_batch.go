package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/sqlstore"
)

var (
	_ ledger.BatchClaimer   = (*LedgerStore)(nil)
	_ ledger.BatchCompleter = (*LedgerStore)(nil)
)

// itemWriteSpec is one conditional statement on one item, with how its
// refusal and its re-run are read (see itemWrite).
type itemWriteSpec struct {
	op      string
	key     ledger.ItemKey
	stmt    namedSQL
	args    pgx.NamedArgs
	mine    func(ledger.Item) bool  // a refusal by the statement's own earlier write
	refusal func(ledger.Item) error // the sentinel of a refusal by cur
	after   func(ledger.Item) error // optional: the error of an applied write (a claim that made the item DEAD)
}

// finish turns an itemWrite's outcome into the operation's.
func (w itemWriteSpec) finish(it ledger.Item, err error) (ledger.Item, error) {
	return finishWrite(w.op, w.key, w.after, it, err)
}

// finishWrite turns the outcome of op's write of key into the
// operation's; after is as itemWriteSpec's.
func finishWrite(op string, key ledger.ItemKey, after func(ledger.Item) error, it ledger.Item, err error) (ledger.Item, error) {
	if err == nil && after != nil {
		err = after(it)
	}
	if err == nil {
		return it, nil // before wrapLedger, which would box key for nothing
	}
	return it, wrapLedger(op, key, err)
}

// batchWrites are the entries of one itemWrites call: one operation on
// several items. The entries' own statements, with how their refusals
// are read (spec), are built only for the entries the set statements
// refused: an entry applied at once costs its key and its row.
type batchWrites struct {
	op    string
	keys  []ledger.ItemKey
	spec  func(i int) itemWriteSpec // entry i's own write (op and keys[i] are its)
	after func(ledger.Item) error   // optional: as itemWriteSpec.after, the same for every entry
}

// ClaimBatch implements ledger.BatchClaimer: the claims are one
// statement, INSERT … SELECT FROM unnest(…) ON CONFLICT DO UPDATE … WHERE,
// each row conditioned as Claim's (one statement per distinct
// MaxAttempts and Skew among the entries, all in one round trip; see
// itemWrites).
func (s *LedgerStore) ClaimBatch(ctx context.Context, ps []ledger.ClaimParams) []ledger.Outcome {
	keys := make([]ledger.ItemKey, len(ps))
	for i, p := range ps {
		keys[i] = p.Key
	}
	bw := batchWrites{op: "claim", keys: keys, after: claimAfter,
		spec: func(i int) itemWriteSpec { return claimWrite(ps[i]) }}
	return s.itemWrites(ctx, bw, func(once []int, runs []string) []setStatement {
		type group struct {
			maxAttempts int
			skew        time.Duration
		}
		var order []group
		groups := map[group][]int{}
		for _, i := range once {
			g := group{ps[i].MaxAttempts, ps[i].Skew}
			if _, ok := groups[g]; !ok {
				order = append(order, g)
			}
			groups[g] = append(groups[g], i)
		}
		out := make([]setStatement, 0, len(order))
		for _, g := range order {
			idx := groups[g]
			n := len(idx)
			rs, assets, owners := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
			leases, fences, nows := make([]int64, 0, n), make([]int64, 0, n), make([]int64, 0, n)
			for _, i := range idx {
				p := ps[i]
				rs, assets, owners = append(rs, runs[i]), append(assets, p.Key.Asset), append(owners, p.Owner)
				leases, fences, nows = append(leases, toNanos(p.LeaseUntil)), append(fences, p.Fence), append(nows, toNanos(p.Now))
			}
			out = append(out, setStatement{sql: ledgerClaimMany, args: []any{rs, assets, owners, leases, fences, nows, g.maxAttempts, int64(g.skew)}})
		}
		return out
	})
}

// CompleteBatch implements ledger.BatchCompleter: the completions are
// one statement, UPDATE … FROM unnest(…) WHERE, each row conditioned as
// Complete's (see itemWrites).
func (s *LedgerStore) CompleteBatch(ctx context.Context, ps []ledger.CompleteParams) []ledger.Outcome {
	keys := make([]ledger.ItemKey, len(ps))
	for i, p := range ps {
		keys[i] = p.Key
	}
	bw := batchWrites{op: "complete", keys: keys,
		spec: func(i int) itemWriteSpec { return completeWrite(ps[i]) }}
	return s.itemWrites(ctx, bw, func(once []int, runs []string) []setStatement {
		n := len(once)
		rs, assets, owners := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
		attempts, results, nows := make([]int32, 0, n), make([][]byte, 0, n), make([]int64, 0, n)
		for _, i := range once {
			p := ps[i]
			rs, assets, owners = append(rs, runs[i]), append(assets, p.Key.Asset), append(owners, p.Owner)
			attempts, results, nows = append(attempts, int32(p.Attempt)), append(results, p.Result), append(nows, toNanos(p.Now))
		}
		return []setStatement{{sql: ledgerCompleteMany, args: []any{rs, assets, owners, attempts, results, nows}}}
	})
}

// setStatement is one statement writing several items, each row under
// its own condition, RETURNING run and sqlstore.ItemColumns of each row it
// wrote.
type setStatement struct {
	sql  string
	args []any
}

// The set-based statements of ClaimBatch and CompleteBatch: each row's
// condition is that of ledgerClaim and ledgerComplete. The rows are
// taken in key order (the batch's lock order, see itemWrites).
var (
	ledgerClaimManyExhausted = `($7::integer > 0 AND i.attempt >= $7::integer)`
	ledgerClaimMany          = `
		INSERT INTO baton_items AS i (run, asset, state, owner, attempt, lease_until, fence, created_at, started_at, updated_at)
		SELECT u.run, u.asset, 'RUNNING', u.owner, 1, u.lease_until, u.fence, u.now, u.now, u.now
		FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[]) AS u(run, asset, owner, lease_until, fence, now)
		ORDER BY u.run, u.asset
		ON CONFLICT (run, asset) DO UPDATE SET
			state       = CASE WHEN ` + ledgerClaimManyExhausted + ` THEN 'DEAD' ELSE 'RUNNING' END,
			owner       = CASE WHEN ` + ledgerClaimManyExhausted + ` THEN i.owner ELSE excluded.owner END,
			attempt     = CASE WHEN ` + ledgerClaimManyExhausted + ` THEN i.attempt ELSE i.attempt + 1 END,
			lease_until = CASE WHEN ` + ledgerClaimManyExhausted + ` THEN i.lease_until ELSE excluded.lease_until END,
			fence       = CASE WHEN ` + ledgerClaimManyExhausted + ` THEN i.fence ELSE excluded.fence END,
			error       = CASE WHEN ` + ledgerClaimManyExhausted + ` THEN 'attempts exhausted' ELSE i.error END,
			started_at  = CASE WHEN ` + ledgerClaimManyExhausted + ` THEN i.started_at ELSE excluded.started_at END,
			finished_at = CASE WHEN ` + ledgerClaimManyExhausted + ` THEN excluded.updated_at ELSE i.finished_at END,
			updated_at  = excluded.updated_at
		WHERE i.state = 'FAILED' OR (i.state = 'RUNNING' AND i.lease_until + $8::bigint <= excluded.updated_at)
		RETURNING i.run, ` + qualifiedItemColumns

	ledgerCompleteMany = `
		UPDATE baton_items AS i SET state = 'SUCCEEDED', result = u.result, finished_at = u.now, updated_at = u.now
		FROM (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::integer[], $5::bytea[], $6::bigint[])
			AS x(run, asset, owner, attempt, result, now) ORDER BY run, asset) AS u
		WHERE i.run = u.run AND i.asset = u.asset AND i.state = 'RUNNING' AND i.owner = u.owner AND i.attempt = u.attempt
		RETURNING i.run, ` + qualifiedItemColumns
)

// qualifiedItemColumns is sqlstore.ItemColumns of the table aliased i.
var qualifiedItemColumns = qualify("i", sqlstore.ItemColumns)

// itemWrites runs the writes as itemWrite runs one, together: first
// set's statements (one statement writes many items, each row under its
// own condition, the same as the write's own statement), all in one round
// trip; then, when some entries were refused, for those only, one more
// pipelined batch (one round trip) of a read of the record FOR UPDATE and
// the entry's own statement again each (bw.spec), which picks each
// refusal's sentinel from the very record that refused it (or applies the
// statement, the record having changed in between). The items are written
// in key order, so that two batches over the same items never wait for
// each other in a cycle. A batch cut by a lost connection is sent again
// whole (attempts): a refusal by a record mine recognises is then that
// entry's own first write, its success. set is given the entries written
// once (in key order) and each entry's run id in its canonical form.
//
// The same item twice in one call is refused for its second entry
// (ErrConflict): no caller has a reason to write an item twice at once.
func (s *LedgerStore) itemWrites(ctx context.Context, bw batchWrites, set func(once []int, runs []string) []setStatement) []ledger.Outcome {
	keys := bw.keys
	out := make([]ledger.Outcome, len(keys))
	if len(keys) == 0 {
		return out
	}
	// Each run id's text once: a batch's items are mostly of one run.
	runs := make([]string, len(keys))
	for i, k := range keys {
		if i > 0 && k.Run == keys[i-1].Run {
			runs[i] = runs[i-1]
			continue
		}
		runs[i] = k.Run.String()
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(runs[a], runs[b]), cmp.Compare(keys[a].Asset, keys[b].Asset))
	})
	// A key given twice: its later entries are left out of the batch.
	once := make([]int, 0, len(keys))
	at := make(map[itemRef]int, len(keys)) // entry by run and asset
	for _, i := range order {
		ref := itemRef{runs[i], keys[i].Asset}
		if _, dup := at[ref]; dup {
			out[i].Err = wrapLedger(bw.op, keys[i], errDuplicateEntry)
			continue
		}
		at[ref] = i
		once = append(once, i)
	}

	var a attempts
	applied := make([]bool, len(keys))
	stmts := set(once, runs)
	err := s.db.batch(ctx, &a, func(b *pgx.Batch) {
		for _, st := range stmts {
			b.Queue(st.sql, st.args...)
		}
	}, func(br pgx.BatchResults) error {
		clear(applied)
		// One row and one list of destinations for every row: each
		// scan sets every column, and Item copies the row out.
		var ref itemRef
		var r sqlstore.ItemRow
		dest := scanInPlace(append([]any{&ref.run}, r.Dest()...))
		for range stmts {
			rows, err := br.Query()
			if err != nil {
				return err
			}
			for rows.Next() {
				if err := rows.Scan(dest...); err != nil {
					rows.Close()
					return err
				}
				ref.asset = r.Asset()
				i, ok := at[ref]
				if !ok {
					rows.Close()
					return fmt.Errorf("a batched write returned item %s of run %s, not one of its entries", ref.asset, ref.run)
				}
				out[i].Item, applied[i] = r.Item(keys[i].Run), true
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		for _, i := range once {
			out[i] = ledger.Outcome{Err: wrapLedger(bw.op, keys[i], translate(err))}
		}
		return out
	}
	var refused []int
	for _, i := range once {
		if !applied[i] {
			refused = append(refused, i)
		}
	}
	type second struct {
		w              itemWriteSpec
		cur, wrote     ledger.Item
		found, applied bool
	}
	var res map[int]*second
	if len(refused) > 0 {
		res = make(map[int]*second, len(refused))
		for _, i := range refused {
			res[i] = &second{w: bw.spec(i)}
		}
		err = s.db.batch(ctx, &a, func(b *pgx.Batch) {
			for _, i := range refused {
				w := res[i].w
				b.Queue(`SELECT `+sqlstore.ItemColumns+` FROM baton_items WHERE run = $1 AND asset = $2 FOR UPDATE`, runs[i], keys[i].Asset)
				b.Queue(w.stmt.sql, w.stmt.args(w.args)...)
			}
		}, func(br pgx.BatchResults) error {
			for _, i := range refused {
				r := res[i]
				var err error
				r.cur, err = sqlstore.ScanItem(br.QueryRow().Scan, keys[i].Run)
				r.found = err == nil
				if err != nil && !errors.Is(err, pgx.ErrNoRows) {
					return err
				}
				r.wrote, err = sqlstore.ScanItem(br.QueryRow().Scan, keys[i].Run)
				r.applied = err == nil
				if err != nil && !errors.Is(err, pgx.ErrNoRows) {
					return err
				}
			}
			return nil
		})
	}
	for _, i := range once {
		if applied[i] {
			out[i].Item, out[i].Err = finishWrite(bw.op, keys[i], bw.after, out[i].Item, nil)
			continue
		}
		r := res[i]
		w := r.w
		var it ledger.Item
		var werr error
		switch {
		case err != nil:
			werr = translate(err)
		case r.applied:
			it = r.wrote
		case !r.found:
			werr = ledger.ErrNotFound
		case a.unsure && w.mine(r.cur):
			it = r.cur
		default:
			it, werr = r.cur, w.refusal(r.cur)
		}
		out[i].Item, out[i].Err = w.finish(it, werr)
	}
	return out
}

// itemRef is an item by its run id's text and its asset: a row's
// identity as a statement returns it.
type itemRef struct{ run, asset string }

// errDuplicateEntry is the error of a batch's entry whose item an earlier
// entry of the same batch writes.
var errDuplicateEntry = fmt.Errorf("the item is given twice in one batch: %w", ledger.ErrConflict)

// qualify prefixes each of the comma-separated columns with alias.
func qualify(alias, columns string) string {
	parts := strings.Split(columns, ",")
	for i, c := range parts {
		parts[i] = alias + "." + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}
