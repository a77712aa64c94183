package coordinator_test

import (
	"testing"

	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/memfake"
)

func newStores(t *testing.T) (lease.Store, ledger.Store) {
	t.Helper()
	return memfake.NewLeases(), memfake.NewLedger()
}
