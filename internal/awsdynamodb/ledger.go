package awsdynamodb

import (
	"fmt"

	"github.com/batonhq/baton/internal/ledger"
)

// LedgerStore is a ledger.Store on a DynamoDB table: one record per tick
// (pk RUN#<job>, sk <nominal>) and one per item (pk ITEMS#<run id>, or
// ITEMS#<run id>#P<p> for a large run spread over partitions; sk <asset>).
type LedgerStore struct {
	t      table
	parts  *partsCache // item partitioning of run generations
	ranges *pageRanges // name ranges of stored pages (runs partitioned by page)
}

var _ ledger.Store = (*LedgerStore)(nil)

// NewLedgerStore returns a ledger store on the table called table, which
// must have the key schema CreateTable makes.
func NewLedgerStore(client API, table string, o *Options) *LedgerStore {
	return &LedgerStore{t: newTable(client, table, o), parts: &partsCache{}, ranges: &pageRanges{}}
}

// validRunID reports what is wrong with id, if anything.
func validRunID(id ledger.RunID) error {
	if err := ledger.ValidName("job", id.Job); err != nil {
		return err
	}
	if id.Submission != "" {
		if err := ledger.ValidName("submission", id.Submission); err != nil {
			return err
		}
	}
	if id.Generation < 1 {
		return fmt.Errorf("run %s: generation must be at least 1", id)
	}
	return nil
}

// validItemKey reports what is wrong with k, if anything.
func validItemKey(k ledger.ItemKey) error {
	if err := validRunID(k.Run); err != nil {
		return err
	}
	return ledger.ValidName("asset", k.Asset)
}
