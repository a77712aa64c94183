package consumer_test

import (
	"testing"

	"github.com/batonhq/baton/internal/bars"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/memfake"
)

func newStores(t *testing.T) (ledger.Store, bars.Store) {
	t.Helper()
	return memfake.NewLedger(), memfake.NewBars()
}
