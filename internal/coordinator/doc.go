// Package coordinator turns a schedule trigger into one run of the tick it
// belongs to, and fans one queue message per catalog asset out.
//
// # Semantics
//
// Run(trigger):
//
//  1. The nominal tick is the schedule's latest tick at or before the
//     trigger time (an event at 12:01:07 for rate(1 minute) is the
//     12:01:00 tick), so any number of triggers for one tick name the same
//     run.
//  2. The job's lease is acquired for Owner with TTL = Limits.LeaseTTL,
//     never past the invocation deadline (a coordinator killed at its
//     deadline frees the job at once). A live lease held by another owner
//     is not an error: the invocation is skipped and the summary names the
//     holder, its expiry and fence. A store error is an error.
//  3. The run is opened with the lease's fence (ledger.Store.OpenRun):
//     a new run, or a run left fanning out by a stopped coordinator
//     (resumed from its cursor), or nothing to do when the tick is already
//     fanned out (unless Force opens the next generation).
//  4. Fan-out sends one message per catalog asset, from the run's cursor,
//     in chunks; after every chunk the cursor is checkpointed
//     (AdvanceRun), and the lease renewed once half its TTL has gone. It
//     stops before the deadline minus Limits.DeadlineMargin and before
//     Limits.FanOutBudget, leaving the run fanning_out with its cursor for
//     the next invocation (a chunk sent but not checkpointed is sent again:
//     claims absorb the duplicates). When every asset is sent the run
//     becomes fanned_out. Derived items are not fanned out: the consumer
//     enqueues them when their inputs succeed. A catalog of ExpandFrom assets or more (1,000 by default) is fanned
//     out hierarchically: one shard message (message version 3) per
//     ExpandItems assets (100), naming the range of the catalog it stands
//     for; a consumer vouches for it as for an item message and sends the
//     range's item messages with its fence. The coordinator sends
//     O(assets/ExpandItems) messages, so one invocation fans out a million
//     assets (10,000 shard messages, 1,000 batch sends) and no Lambda
//     timeout bounds the run's size; the cursor counts the assets the
//     shard messages sent stand for, and a chunk sent twice is expanded
//     twice, absorbed by the claims like any duplicate. A run whose
//     items are a stored list (a run-time list or a submission) fans out
//     by its pages (up to 64 items each), stored as they are filled: a
//     page past ExpandFrom items (every page, for a job that declares
//     ExpectedItems of ExpandFrom or more, or a bulk job) goes out as one
//     page shard message (message version 4) that a consumer expands into
//     the page's item messages (version 2) or runs in place; the others
//     as their items' messages.
//  5. The lease is released (best effort: a failure is logged, and the
//     lease expires anyway).
//
// Settle finishes a fanned-out run once every catalog asset and derived
// item is terminal (complete, or partial when some are DEAD or CANCELLED),
// cancelling on the way the derived items whose inputs ended without
// success, so that a run always settles. Run settles the previous tick's
// run and, when nothing was fanned out, the trigger's own, cheaply (one
// read of the run and one of its items each).
//
// # Submissions under contention
//
// Submit holds the lease of job+key while it opens and fans out; a second
// caller of the key waits for the holder (ContentionWait, with backoff),
// answers with its run, and takes the fan-out over when the holder's lease
// expires meanwhile. A run keeps the digest of its submission's items
// (ledger.Run.Digest), so that a caller with other items is told they
// were not used (Summary.PayloadDiffers).
//
// # Chains: who sends the chained run
//
// The chained run is started by the settler whose FinishRun finished its
// parent (fanin.Finisher): a settler that finds the parent finished by
// another leaves it to that one, so the chained run's messages are sent
// once where the ledger can tell (its conditional finish has one winner).
// It cannot be exactly once everywhere without losing the crash
// guarantee: a finisher that stops between its finish and its send would
// lose the chained run. So the recovery path stays: past fanin.ChainGrace
// after the finish, any settler (the parent job's next trigger, which
// looks at its recent runs) starts the chains again, and a chained run
// opens once whoever starts it (a submission keyed by baton.ChainKey).
// Without a lease (a consumer on AWS, whose role may not write leases) two
// starters that overlap within that path may both send part of the list;
// the claims absorb the duplicates.
package coordinator
