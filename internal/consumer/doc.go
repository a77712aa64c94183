// Package consumer processes a batch of item messages: it claims each item
// with its idempotency key, runs the job's processor under the claim, and
// records the verdict with a conditional write, so that duplicate
// deliveries, crashes and replays never apply an item's effect twice and
// never lose an item.
//
// # Semantics
//
// Handle returns the messages to acknowledge implicitly: every message not
// listed in Result.Failed may be deleted from the queue. A message is
// acknowledged only when its item is terminal (SUCCEEDED, DEAD or
// CANCELLED), was already terminal, was forwarded to the dead-letter queue
// with its reason (invariant 7), or was sent again as a new message (held
// at its last receive, see below). Everything else is a batch-item failure
// that the queue redelivers.
//
// For each message, in order:
//
//  1. Decode. A malformed body, an unknown job or an asset that is neither
//     in the job's catalog nor one of its derived items is forwarded to
//     DeadLetter with the reason in the baton-error attribute and
//     acknowledged; without DeadLetter it is reported failed with an error
//     naming the problem. One bad message never affects the rest.
//  2. Deadline. A message whose processing would start at or after the
//     invocation deadline minus the job's DeadlineMargin is not started
//     (status not_started, failed): an item is never half-run.
//  3. Vouch (invariant 10). The ledger must vouch for the message before
//     anything is written: its tick is not in the future (beyond the job's
//     ClockSkew), the tick has a run, the message's generation is the
//     run's current one, and its fence is at most the latest fence the run
//     recorded (every coordinator records its fence on the run before it
//     sends). A message of an older generation is acknowledged as
//     superseded; anything else unvouched is forwarded to DeadLetter at
//     once (status unvouched, ErrUnvouched) and writes nothing. The run is
//     read through a RunCache (one read answers for a tick's messages for
//     a second; a message the cached record cannot vouch for reads it
//     again).
//     A shard message (hierarchical fan-out, message version 3) goes no
//     further than the vouch: the items of its range (ItemsFunc; the
//     job's catalog assets by default) are sent as item messages with its
//     fence, and it is acknowledged (status expanded). A page shard
//     message (version 4) does the same with the items of its stored page
//     (read through Pages), sent as version 2 messages naming the page; a
//     page that is not stored is unvouched. A range whose first
//     item is not the message's key, or that the job does not have, is
//     poison: dead-lettered with the reason. A failed send leaves it to be
//     redelivered, and its redelivery sends the range again: the claims
//     absorb the duplicates, so every shard is expanded exactly once in
//     effect.
//     A shard message of a bulk job (baton.Job.Bulk) is run in place
//     instead (status ran): each item of its range goes through steps 2
//     to 8 here, as a message of its own would (with the shard's fence
//     and receive count), up to the job's Limits.Concurrency at once. An
//     item whose verdict would leave its message to be redelivered
//     (failed with attempts left, held by a live claim, not started at
//     the deadline less the margin or at a stop, a store error) is handed
//     over: its item message is sent, and it goes on as in per-item mode.
//     The shard message is acknowledged once every item is terminal or
//     handed over (a failed hand-over leaves it to be redelivered), its
//     visibility extended every third of an item lease meanwhile; a
//     redelivery finds the items that ended terminal (duplicates, not
//     run again) and hands over those held by a live claim, so every
//     item runs to its end once in effect. The items' outcomes are in
//     MessageOutcome.Ran (Result.Outcomes lists them with the batch's).
//  4. Run budget. Past the job's RunBudget since its run opened, an item
//     not started (no record, FAILED, or abandoned by an expired claim) is
//     CANCELLED with the reason "run budget … exceeded", and so are the
//     derived items downstream of it; the message is acknowledged (status
//     over_budget). A live claim or a terminal item goes on to the claim.
//  5. Claim, with LeaseUntil = min(now+the item's lease, deadline-margin). An item
//     already terminal is acknowledged without calling the processor
//     (status duplicate); an item held by a live owner is failed (held) and
//     comes back later.
//  6. Process, with a context that ends with the claim (see Claim below).
//     Success →
//     Complete (only the current owner and attempt may complete: a late
//     completion by a stale owner is rejected and reported failed). Error →
//     Fail: DEAD when the error is baton.Permanent or the attempts are
//     exhausted (acknowledged), FAILED otherwise (failed, retried).
//  7. Fan-in. The completion that makes an input of a derived item
//     SUCCEEDED (or DEAD) runs the fan-in check (package fanin): the derived
//     item is enqueued once all its inputs SUCCEEDED and it has no record
//     yet, cancelled once one of them is DEAD or CANCELLED, and so, down
//     the graph, are the derived items that depend on a cancelled one. If the check
//     fails, the input's message is reported failed; its redelivery (after
//     the visibility timeout, an item lease or more after the completion)
//     runs the check again (invariant 6). Other copies of a terminal
//     input's message only cancel doomed derived items, so a delivery storm
//     enqueues a derived item once, twice when two last inputs complete
//     together.
//  8. Settle (invariant 11, at any size). The consumer that ends an item
//     (completed, DEAD, cancelled) settles the item's shard
//     (fanin.SettleShard), once the batch is done and before any of its
//     messages is acknowledged, each shard of the batch's items once: it
//     reads the shard's probe (fanin.ProbeItems of its names, one small
//     ledger.Store.ListItemRange) and, once those have ended, the shard's
//     items (about fanin.ShardItems whatever the run's size), and when
//     all are terminal writes the shard's write-once settle mark and
//     climbs the run's tree of marks; the marker that completes the top
//     level finishes the run (complete or partial, with its counts). The
//     last item's consumer sees its shard complete, and the last shard's
//     marker sees every other shard marked, so a run settles when its
//     last item ends, whoever ends it. A settle that fails is logged; a
//     redelivery of a terminal item's message that comes an item lease or
//     more after its end settles again, and any coordinator invocation
//     settles what is left, so a crash between a mark and the finish is
//     recovered. Runs opened by earlier versions (no shard count) settle
//     here only up to fanin.LegacySettleMax items.
//
// # Set-based transitions
//
// On a ledger that claims and completes many items per statement
// (ledger.BatchClaimer and ledger.BatchCompleter: PostgreSQL), the plain
// item messages of a batch (not a shard, not a derived item, not of a job
// with rate limits: those take the steps above one message at a time,
// their input check and limit waits before their claim) go in waves of
// the batch's parallelism: each is gated as above (deadline, stop, vouch,
// page, run budget), the wave's items that passed are claimed in one
// call, every claim conditioned on its own item (an item refused, held
// or terminal, is that message's verdict alone, as in step 5), their
// processors run at once, and the items that succeeded are completed in
// one call once every processor of the wave has returned; a processor
// that returned waits for the others at most a third of its item's lease,
// then its item is completed alone. Failures, cancellations and releases
// are recorded one by one; fan-in, settling and the dead-letter policy
// are as above. The settle reads the shards of a batch's items together
// when the ledger reads several ranges at once (ledger.RangesLister).
//
// # Claim
//
// The task's Claim (baton.Claim) holds the item for the item's lease
// (baton.Job.ItemLease: the job's, or the derived item's own) from the
// claim, capped at the invocation's deadline less the job's margin. A
// heartbeat (Task.Heartbeat) extends it to one lease from then (one
// conditional write, ledger.Store.Extend), never past that cap, and, when
// the work queue is a queue.VisibilityChanger, hides the message as long
// (plus the clock-skew allowance). While the processor runs, the claim
// also checks itself every third of the lease with one read of the item,
// unless a heartbeat wrote it meanwhile. The processor's context ends,
// with a cause (context.Cause), when the lease runs out without a
// heartbeat (matching context.DeadlineExceeded), when a heartbeat or a
// check finds the item CANCELLED (baton.ErrCancelled: `baton cancel`
// reaches running code within a third of a lease), or when the claim was
// lost to another attempt (baton.ErrClaimLost). An item cancelled while
// it ran is acknowledged as cancelled whatever the processor returned: its
// result is refused, the item stays CANCELLED.
//
// # Derived items
//
// A derived item is processed only when all its inputs SUCCEEDED; its task
// carries their results in Task.Inputs. A derived message that arrives
// early is failed without a claim (status held, no attempt spent, reason
// matching ErrInputsPending) and comes back after RetryDelay; at its last
// receive it is sent again as a new message (status requeued), never
// dead-lettered: it was early, not poison, and a dead letter would outlive
// an item that then succeeds by fan-in. It waits so until its inputs end:
// all succeeded, it runs (or is a duplicate of fan-in's message); one
// without success, it is cancelled. An input that never ends (its run
// stuck open) keeps it coming back, one receive per RetryDelay, until the
// run is resumed or cancelled.
//
// With MaxReceives set, a message still failing at that receive count is
// forwarded to DeadLetter with its reason and acknowledged, instead of
// being left to the queue's own redrive (which carries no reason). Three
// failures are not forwarded but sent again as a new message and
// acknowledged (status requeued): a derived item's early message (above),
// one waiting on a busy key of a keyed limit (ErrLimited), and a message
// whose item is held by a live claim (status held from the claim). That
// claim may be a dead consumer's, taken from this very message, delivered
// twice at once (SQS may) and retried sooner than the claim lasts (a
// poller's retry delay); forwarding it would leave the item RUNNING with
// no message to finish it. The claim ends within the job's ItemLease, so
// the new message finds the item claimable or terminal.
//
// # Stopping
//
// Consumer.Stop ends a graceful shutdown's grace period (an HTTP worker's
// SIGTERM): once it is closed no message is started, and a processor still
// running sees its context cancelled. What is cut short is given back: the
// claim is released (ledger Release: no verdict recorded, claimable by
// another consumer once the job's clock-skew allowance has passed) and the
// message reported failed with status released, never dead-lettered, so
// that the queue delivers it again.
package consumer
