package awsdynamodb

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/batonhq/baton/internal/ledger"
)

// Item page attributes (pk ITEMS#<run id>#PAGE#<index>, sk PAGE).
const (
	pageItems  = "items"  // Binary: ledger.EncodePageItems
	pageFinal  = "final"  // Number: 0 or 1
	pageResume = "resume" // String, absent when empty
	pageParent = "parent" // String, absent when empty
	pageAt     = "at"
	skPage     = "PAGE"
)

// pageKey is page index of run: a partition of its own, pk
// ITEMS#<run id>#PAGE#<index>, sk PAGE. A page is written once and read
// by a consumer process once (it caches it), so no partition takes work
// that grows with the run. The pk starts with the run's item prefix (the
// roles that write a run's items write its pages) and is no item or mark
// partition's: a run id never holds "#PAGE#". A page's encoded items are
// at most ledger.MaxPageBytes (350,000) bytes, so the record stays under
// DynamoDB's 400 KB item limit.
func pageKey(run ledger.RunID, index int) key {
	return key{prefixItems + run.String() + "#PAGE#" + strconv.Itoa(index), skPage}
}

// PutPage implements ledger.Store with one PutItem conditioned on no
// record; a refusal returns the record that refused it.
func (s *LedgerStore) PutPage(ctx context.Context, p ledger.PutPageParams) (ledger.Page, error) {
	op := fmt.Sprintf("page %d of %s", p.Index, p.Run)
	if err := validRunID(p.Run); err != nil {
		return ledger.Page{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := ledger.CheckPage(p); err != nil {
		return ledger.Page{}, err
	}
	final := int64(0)
	if p.Final {
		final = 1
	}
	rec := record{
		pageItems: &types.AttributeValueMemberB{Value: ledger.EncodePageItems(p.Items)},
		pageFinal: num(final),
		pageAt:    nanos(p.Now),
	}
	if p.Resume != "" {
		rec[pageResume] = str(p.Resume)
	}
	if p.Parent != "" {
		rec[pageParent] = str(p.Parent)
	}
	if ttl, ok := s.t.expiry(p.Now); ok {
		rec[attrTTL] = ttl
	}
	w, err := s.t.put(ctx, op, pageKey(p.Run, p.Index), rec, "attribute_not_exists(#pk)", nil)
	if err != nil {
		return ledger.Page{}, err
	}
	if w.rec == nil {
		return ledger.Page{}, fmt.Errorf("%s: refused, and no record to say why", op)
	}
	pg, err := decodePage(p.Run, p.Index, w.rec)
	if err != nil {
		return ledger.Page{}, fmt.Errorf("%s: %w", op, err)
	}
	s.ranges.add(pg)
	if !w.applied {
		return pg, fmt.Errorf("%s: written already: %w", op, ledger.ErrTerminal)
	}
	return pg, nil
}

// GetPage implements ledger.Store with one consistent GetItem.
func (s *LedgerStore) GetPage(ctx context.Context, run ledger.RunID, index int) (ledger.Page, error) {
	op := fmt.Sprintf("page %d of %s", index, run)
	if err := validRunID(run); err != nil {
		return ledger.Page{}, fmt.Errorf("%s: %w", op, err)
	}
	if index < 0 {
		return ledger.Page{}, fmt.Errorf("%s: negative index", op)
	}
	rec, err := s.t.get(ctx, op, pageKey(run, index))
	if err != nil {
		return ledger.Page{}, err
	}
	if rec == nil {
		return ledger.Page{}, fmt.Errorf("%s: %w", op, ledger.ErrNotFound)
	}
	pg, err := decodePage(run, index, rec)
	if err != nil {
		return ledger.Page{}, fmt.Errorf("%s: %w", op, err)
	}
	s.ranges.add(pg)
	return pg, nil
}

// decodePage reads page index of run.
func decodePage(run ledger.RunID, index int, rec record) (ledger.Page, error) {
	d := decoder{rec: rec}
	raw := d.bytes(pageItems)
	pg := ledger.Page{Run: run, Index: index, Final: d.int(pageFinal) == 1, At: d.time(pageAt), Resume: strAttr(rec, pageResume), Parent: strAttr(rec, pageParent)}
	if d.err != nil {
		return ledger.Page{}, fmt.Errorf("decode page record: %w", d.err)
	}
	var err error
	if pg.Items, err = ledger.DecodePageItems(raw); err != nil {
		return ledger.Page{}, fmt.Errorf("decode page record: %w", err)
	}
	return pg, nil
}
