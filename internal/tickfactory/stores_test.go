package tickfactory_test

import (
	"testing"

	"github.com/batonhq/baton/internal/bars"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/memfake"
)

func newBars(t *testing.T) bars.Store {
	t.Helper()
	return memfake.NewBars()
}

func newLedgerStores(t *testing.T) (lease.Store, ledger.Store) {
	t.Helper()
	return memfake.NewLeases(), memfake.NewLedger()
}
