package awsdynamodb_test

import (
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/effect/effecttest"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/lease/leasetest"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/ledger/ledgertest"
	"github.com/batonhq/baton/internal/ratelimit"
	"github.com/batonhq/baton/internal/ratelimit/ratelimittest"
)

// The conformance suites share one table per test binary, made by the
// first case that asks for it: every case names its jobs and assets
// uniquely.
var conformance struct {
	once   sync.Once
	client *dynamodb.Client
	table  string
}

func conformanceTable(t *testing.T) (*dynamodb.Client, string) {
	t.Helper()
	serverClient(t) // skips the case when there is no server
	conformance.once.Do(func() { conformance.client, conformance.table = newTable(t) })
	if conformance.client == nil {
		t.Fatal("creating the conformance table failed in another case")
	}
	return conformance.client, conformance.table
}

func TestLeaseConformance(t *testing.T) {
	t.Parallel()
	leasetest.Run(t, leasetest.Harness{
		NewStore: func(t *testing.T) lease.Store {
			c, table := conformanceTable(t)
			return awsdynamodb.NewLeaseStore(c, table, nil)
		},
		// The contention record is one unconditional UpdateItem: the
		// refusal written last is kept, not the latest by the clocks.
		Capabilities: leasetest.Capabilities{LatestRefusalByClock: false},
	})
}

func TestLedgerConformance(t *testing.T) {
	t.Parallel()
	ledgertest.Run(t, ledgertest.Harness{NewStore: func(t *testing.T) ledger.Store {
		c, table := conformanceTable(t)
		return awsdynamodb.NewLedgerStore(c, table, nil)
	}})
}

func TestEffectConformance(t *testing.T) {
	t.Parallel()
	effecttest.Run(t, effecttest.Harness{NewStoreFunc: func(t *testing.T) effect.Store {
		c, table := conformanceTable(t)
		return awsdynamodb.NewEffectStore(c, table, nil)
	}})
}

// The suite again on a server that returns the old record with a failed
// condition, as DynamoDB does: a refused Put decides from that record
// instead of reading it back.
func TestEffectConformanceAllOld(t *testing.T) {
	t.Parallel()
	effecttest.Run(t, effecttest.Harness{NewStoreFunc: func(t *testing.T) effect.Store {
		c, table := conformanceTable(t)
		return awsdynamodb.NewEffectStore(allOld{API: c, table: table}, table, nil)
	}})
}

func TestRateLimitConformance(t *testing.T) {
	t.Parallel()
	ratelimittest.Run(t, ratelimittest.Harness{
		NewStore: func(t *testing.T) ratelimit.Store {
			client, table := conformanceTable(t)
			return awsdynamodb.NewRateLimitStore(client, table, nil)
		},
	})
}

// Two clients (two processes' worth), 8 callers each, share a limit of 10
// starts per 250 ms for 2 s on the DynamoDB server (the emulator serves
// about 200 conditional writes a second to 16 callers): the observed rate
// stays at the limit (the full 60 s measure at 50/s is in make bench).
func TestRateLimitSharedByTwoProcesses(t *testing.T) {
	t.Parallel()
	client, table := conformanceTable(t)
	second := serverClient(t)
	stores := []ratelimit.Store{awsdynamodb.NewRateLimitStore(client, table, nil), awsdynamodb.NewRateLimitStore(second, table, nil)}
	m, err := ratelimittest.Measure(t.Context(), stores, 8, ratelimit.Limit{Name: "shared-" + table, Starts: 10, Per: 250 * time.Millisecond}, 2*time.Second)
	require.NoError(t, err)
	t.Logf("%d starts in %s: %.1f/s for a limit of %.0f/s, %d takes", m.Starts, m.Span, m.Rate, m.Limit, m.Attempts)
	require.LessOrEqual(t, m.Rate, m.Limit*1.05)
	require.GreaterOrEqual(t, m.Rate, m.Limit*0.9)
}

func TestLockConformance(t *testing.T) {
	t.Parallel()
	leasetest.Run(t, leasetest.Harness{
		NewStore: func(t *testing.T) lease.Store {
			c, table := conformanceTable(t)
			return awsdynamodb.NewLockStore(c, table, nil)
		},
		Capabilities: leasetest.Capabilities{LatestRefusalByClock: false},
	})
}
