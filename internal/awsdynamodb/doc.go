// Package awsdynamodb implements baton's lease, ledger and effect ports on
// one DynamoDB table, with aws-sdk-go-v2.
//
// The constructors take the client and the table name:
//
//	leases := awsdynamodb.NewLeaseStore(client, table, nil)
//	ledger := awsdynamodb.NewLedgerStore(client, table, nil)
//	effects := awsdynamodb.NewEffectStore(client, table, nil)
//
// The three stores may share one client and one table. CreateTable makes
// the table (baton setup).
//
// # Table
//
// One table, key schema pk (String, partition key) and sk (String, sort
// key), on-demand billing, TTL on the ttl attribute. Record kinds are told
// apart by the prefix of pk:
//
//	record  pk                       sk                         written by
//	lease   LEASE#<job>              LEASE                      Acquire, Renew, Release
//	run     RUN#<job>                <nominal, RFC 3339 UTC>    OpenRun, AdvanceRun, FinishRun
//	item    ITEMS#<run id>           <asset>                    Claim, Complete, Fail, Release, Cancel
//	        ITEMS#<run id>#P<p>      <asset>                    (the same, for a run spread over partitions)
//	effect  EFFECT#<job>#<key>       EFFECT                     Put
//	count   CONTENTION#<job>         CONTENTION                 RecordContention (lease.ContentionCounter: operators' count of refused acquisitions)
//	pause   PAUSE#<job>              PAUSE                      SetPause, RecordSkipped (lease.Pauser: the job's pause flag and skipped ticks)
//	limit   LIMIT#<name>#<win>#<n>   LIMIT                      Take (a rate limit's counter; LIMIT#<name>#SLOT#<n>: Hold, Free)
//	keys    LIMIT#<name>#KEYS#<b>    <key, query-escaped>       Take, Hold of a keyed limit (its key directory, read by ListUsage)
//
// The run id is job@<nominal>#<generation> (ledger.RunID). The items of a
// generation opened with at most Options.ShardsPerPartition shards (16 by
// default: 1,024 items) share one partition, so ListItems is one Query;
// a larger generation spreads them over ceil(shards/ShardsPerPartition)
// partition keys ITEMS#<run id>#P<p>, p = ledger.ItemPartition(asset,
// count), so that no partition key takes a share of the run's writes that
// grows with the run (DynamoDB serves about 1,000 write units per second
// per partition key value). The count is stored with the run per
// generation (ledger.Run.Partitions); a store reads it once per
// generation (GetRun, OpenRun and ListRuns note it as they read), and
// ListItems then queries the partitions eight at a time and merges them.
// Runs opened by earlier versions read as one partition, where their
// items are. A run whose items are its stored pages (a run-time list or
// a submission, opened with ledger.OpenRunParams.Pages; its shards are
// the pages of its declared expected size) is partitioned by page
// instead: p = ledger.PagePartition(page, count), page i mod count, so
// that a page is one Query and the pages consumers work on together fall
// in different keys; the run record says so (parts_page, absent in
// records of earlier versions: by name), and a store finds an item's page
// from the ranges of the pages it read or wrote, or by searching the
// stored pages. The runs of
// a job share a partition sorted by nominal time, so ListRuns is one Query
// read backwards. The ledger's job and asset names, and the effects' job
// names, are checked with ledger.ValidName before they go into a key (so
// they hold no '#', '@' or '/'); a lease's job may be any non-empty
// string. An effect's key is any UTF-8 text of 1-512 bytes without NUL
// (effect.ValidateKey): it follows the job's name and one '#', so the pk
// is unambiguous and at most 584 bytes (DynamoDB allows 2048), and every
// effect has a partition of its own. Records of earlier versions under
// BAR#<asset> are no longer read. Times are Numbers of Unix nanoseconds
// (0 for the zero time), compared exactly inside conditions; sort keys
// hold times in whole seconds, as run ids do. infra/dynamodb-table.md lists
// every attribute.
//
// # Semantics
//
// Every transition is one conditional write (UpdateItem or PutItem with a
// ConditionExpression) on one record: no transactions. The decision of a
// transition is made by the condition, against the caller's Now and the
// absolute times stored in the record, never by a read followed by a write
// (the one exception is OpenRun with Force, which reads the generation and
// then writes conditioned on it). Acquire mints the fence in the write that
// takes the lease (fence = if_not_exists(fence, 0) + 1). Claim first puts
// the item's first RUNNING record conditioned on attribute_not_exists(pk)
// (one PutItem, the cheapest condition); only when the item exists and is
// claimable (FAILED, expired RUNNING) does it follow with one UpdateItem
// whose condition covers every claimable case. A new item costs two
// writes in all: claim and complete.
//
// Writes ask for the new record (ReturnValues ALL_NEW) and, on a failed
// condition, for the record that failed it
// (ReturnValuesOnConditionCheckFailure ALL_OLD), which callers turn into
// the ports' errors with that record. A server that does not return it (the emulator) costs one more
// strongly consistent GetItem on refused writes only. Every read is
// strongly consistent (GetItem and Query with ConsistentRead).
//
// Every write stores a random token of its own (attribute tok). It settles
// two cases without guessing:
//
//   - the SDK's retryer resends a write whose response was lost, and the
//     resent write fails its condition because the first one applied: the
//     record carries the token, so the write is reported as done;
//   - a write returns an error after which it may have applied (transport
//     error or timeout after sending, a 5xx): the record is read back with
//     one consistent GetItem (bounded by Options.ResolveTimeout, even when
//     the caller's context is done). It carries the token: the write
//     applied and its result is returned. It does not: the write did not
//     apply (or a later write already replaced it) and the error is
//     returned, saying so; the caller may retry. If the read fails too,
//     the error says the outcome is unknown.
//
// Throttling and 5xx responses are retried by the client's retryer, which
// the stores leave as configured (the SDK's standard mode by default: 3
// attempts with exponential backoff and jitter); what is left after it is
// returned wrapped.
//
// The ttl attribute (epoch seconds) is set on finished runs and terminal
// items to the time they finished plus Options.Retention (30 days by
// default). It is garbage collection only: DynamoDB deletes expired
// records within days, and no decision reads ttl. A tick whose run was
// deleted this way opens again as generation 1 if triggered again. Leases
// and effects have no ttl.
//
// Calls per operation (pinned by TestCalls): acquire, renew, release,
// OpenRun, AdvanceRun, FinishRun, Complete, Fail, Release, Cancel, Put and
// the claim of a new item are one write each (the claim a PutItem); a
// refused claim (the item held or terminal) is one PutItem on DynamoDB,
// and one PutItem plus one GetItem on the emulator; the claim of an
// existing claimable item is the refused PutItem, then one UpdateItem
// (the claim, or DEAD for an item out of attempts); OpenRun with Force is
// a read and a write. A refused write is one call on DynamoDB and one
// call plus one GetItem on the emulator.
//
// The emulator used by the tests (dynalite) differs from DynamoDB in
// that it does not return the old record with a failed condition (see
// above), does not implement UpdateTimeToLive (CreateTable tolerates it)
// and never deletes expired records; its expression parser is slow on
// nested parentheses, so conditions are written flat.
//
// # Errors
//
// The stores return the ports' sentinels (lease.ErrHeld as
// *lease.HeldError, lease.ErrNotHolder, ledger.ErrHeld, ledger.ErrTerminal,
// ledger.ErrConflict, ledger.ErrNotFound, baton.ErrStale, …) for the
// conditions their contracts name, wrapped with the operation and key.
// SDK errors are interpreted in one place: a missing table is
// ErrTableNotFound, naming the table; everything else is wrapped with the
// operation and the table, and errors.As still reaches the SDK's types.
// Invalid input (a bad job or asset name, an empty lease owner, a
// non-positive lease TTL) is an error, none of the sentinels, returned
// before any call; an effect outside effect.Validate's limits is one
// matching effect.ErrInvalid.
package awsdynamodb
