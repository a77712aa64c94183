// Package jobmodeltest runs the job model end to end on a backend, the
// same way on every engine: a job with a run-time item list, a
// submission deduped by its key (and submitted by 8 callers at once), a two-level graph of derived items, a
// chain to a second job, a heartbeating long item, shared rate limits (N
// starts per interval, M in flight) and
// two priority classes (job queues with their concurrency shares), a
// bulk job whose shards run in place,
// each through the coordinator, the queue, the consumers and the ledger
// of the backend under test.
package jobmodeltest

import (
	"testing"

	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/dagtest"
	"github.com/batonhq/baton/internal/heartbeattest"
	"github.com/batonhq/baton/internal/itemstest"
)

// RunTimeItems is the size of the run-time list in make test; make bench
// runs 100,000.
const RunTimeItems = 1000

// ClassQueues are the job queues of the priority classes
// (itemstest.RunPriorities): a backend whose job queues must be made
// beforehand (DynamoDB+SQS) makes them when open is asked for them.
var ClassQueues = []string{"class-bulk", "class-urgent"}

// Run runs every part of the job model on the backend open returns, each
// on a backend of its own; open makes the job queues it is given.
func Run(t *testing.T, open func(t *testing.T, jobQueues ...string) backend.Backend) {
	t.Helper()
	for _, c := range []struct {
		name   string
		run    func(t *testing.T, b backend.Backend)
		queues []string
	}{
		{"RunTimeItems", func(t *testing.T, b backend.Backend) { itemstest.Run(t, b, RunTimeItems) }, nil},
		{"SubmissionDeduped", func(t *testing.T, b backend.Backend) { itemstest.RunSubmission(t, b, 200) }, nil},
		{"SubmissionContention", func(t *testing.T, b backend.Backend) { itemstest.RunSubmissionContention(t, b, 200) }, nil},
		{"TwoLevelDAG", dagtest.Run, nil},
		{"RunTimeListBesideDAG", func(t *testing.T, b backend.Backend) { dagtest.RunBesideRunTimeList(t, b, RunTimeItems) }, nil},
		{"Chain", itemstest.RunChain, nil},
		{"SummaryOverRunTimeItems", itemstest.RunSummary, nil},
		{"RetryDelays", itemstest.RunRetryDelays, nil},
		{"KeyedLimits", itemstest.RunKeyedLimits, nil},
		{"HeartbeatingLongItem", heartbeattest.Run, nil},
		{"SharedRateLimits", itemstest.RunRateLimit, nil},
		{"InFlightLimit", itemstest.RunInFlightLimit, nil},
		{"PriorityClasses", itemstest.RunPriorities, ClassQueues},
		{"PriorityPool", itemstest.RunPriorityPool, ClassQueues},
		{"RunTimeListSettlesDuringFanOut", itemstest.RunSettleDuringFanOut, nil},
		{"BulkShardsRunInPlace", itemstest.RunBulk, nil},
		{"BulkRunTimePagesRunInPlace", itemstest.RunBulkRunTime, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, open(t, c.queues...))
		})
	}
}
