package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/ledger"
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
	if err == nil && w.after != nil {
		err = w.after(it)
	}
	return it, wrapLedger(w.op, w.key, err)
}

// ClaimBatch implements ledger.BatchClaimer: the claims go in one
// pipelined batch (one round trip, see itemWrites).
func (s *LedgerStore) ClaimBatch(ctx context.Context, ps []ledger.ClaimParams) []ledger.Outcome {
	ws := make([]itemWriteSpec, len(ps))
	for i, p := range ps {
		ws[i] = claimWrite(p)
	}
	return s.itemWrites(ctx, ws)
}

// CompleteBatch implements ledger.BatchCompleter: the completions go in
// one pipelined batch (one round trip, see itemWrites).
func (s *LedgerStore) CompleteBatch(ctx context.Context, ps []ledger.CompleteParams) []ledger.Outcome {
	ws := make([]itemWriteSpec, len(ps))
	for i, p := range ps {
		ws[i] = completeWrite(p)
	}
	return s.itemWrites(ctx, ws)
}

// itemWrites runs the writes as itemWrite runs one, together: their
// statements in one pipelined batch (one round trip, one implicit
// transaction), each conditioned on its own item alone; then, when some
// were refused, for those only, one more batch of a read of the record
// FOR UPDATE and the statement again each, which picks each refusal's
// sentinel from the very record that refused it (or applies the
// statement, the record having changed in between). The items are written
// in key order, so that two batches over the same items never wait for
// each other in a cycle. A batch cut by a lost connection is sent again
// whole (attempts): a refusal by a record mine recognises is then that
// entry's own first write, its success.
//
// The same item twice in one call is refused for its second entry with
// the first's record (ErrConflict): no caller has a reason to write an item
// twice at once.
func (s *LedgerStore) itemWrites(ctx context.Context, ws []itemWriteSpec) []ledger.Outcome {
	out := make([]ledger.Outcome, len(ws))
	if len(ws) == 0 {
		return out
	}
	order := make([]int, len(ws))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ka, kb := ws[a].key, ws[b].key
		return cmp.Or(cmp.Compare(ka.Run.String(), kb.Run.String()), cmp.Compare(ka.Asset, kb.Asset))
	})
	// A key given twice: its later entries are left out of the batch.
	var once []int
	for n, i := range order {
		if n > 0 && ws[order[n-1]].key == ws[i].key {
			out[i].Err = wrapLedger(ws[i].op, ws[i].key, errDuplicateEntry)
			continue
		}
		once = append(once, i)
	}

	var a attempts
	applied := make([]bool, len(ws))
	err := s.db.batch(ctx, &a, func(b *pgx.Batch) {
		for _, i := range once {
			b.Queue(ws[i].stmt.sql, ws[i].stmt.args(ws[i].args)...)
		}
	}, func(br pgx.BatchResults) error {
		for _, i := range once {
			it, err := scanItem(br.QueryRow().Scan, ws[i].key.Run)
			switch {
			case err == nil:
				out[i].Item, applied[i] = it, true
			case errors.Is(err, pgx.ErrNoRows):
				applied[i] = false
			default:
				return err
			}
		}
		return nil
	})
	if err != nil {
		for _, i := range once {
			out[i] = ledger.Outcome{Err: wrapLedger(ws[i].op, ws[i].key, translate(err))}
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
		cur, wrote     ledger.Item
		found, applied bool
	}
	res := make(map[int]*second, len(refused))
	if len(refused) > 0 {
		err = s.db.batch(ctx, &a, func(b *pgx.Batch) {
			for _, i := range refused {
				key := ws[i].key
				b.Queue(`SELECT `+ledgerItemColumns+` FROM baton_items WHERE run = $1 AND asset = $2 FOR UPDATE`, key.Run.String(), key.Asset)
				b.Queue(ws[i].stmt.sql, ws[i].stmt.args(ws[i].args)...)
			}
		}, func(br pgx.BatchResults) error {
			for _, i := range refused {
				r := &second{}
				var err error
				r.cur, err = scanItem(br.QueryRow().Scan, ws[i].key.Run)
				r.found = err == nil
				if err != nil && !errors.Is(err, pgx.ErrNoRows) {
					return err
				}
				r.wrote, err = scanItem(br.QueryRow().Scan, ws[i].key.Run)
				r.applied = err == nil
				if err != nil && !errors.Is(err, pgx.ErrNoRows) {
					return err
				}
				res[i] = r
			}
			return nil
		})
	}
	for _, i := range once {
		w := ws[i]
		var it ledger.Item
		var werr error
		switch r := res[i]; {
		case applied[i]:
			it = out[i].Item
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

// errDuplicateEntry is the error of a batch's entry whose item an earlier
// entry of the same batch writes.
var errDuplicateEntry = fmt.Errorf("the item is given twice in one batch: %w", ledger.ErrConflict)
