// Package bench measures baton against the machinery under it and
// prints one markdown table: every figure beside a reference measured in
// the same run on the same server, and their ratio.
//
// `make bench` runs it on every backend: the embedded SQLite store,
// PostgreSQL (a throwaway server started by internal/pgtest, one database
// per scenario, round trips counted by a pgx tracer), and DynamoDB + SQS as
// served by the local emulators (dynalite and local-aws-sqs, started by
// internal/localaws). The scenarios:
//
//  1. Calls per operation, counted by store instrumentation (SQLite: a
//     counting wrapper of the ports, one port call being one transaction)
//     and SDK middleware (AWS: lab/bench/awscall), against the minimum
//     possible: 1 conditional write per lease acquisition, 2 writes per
//     new item, 1 call per duplicate or contended delivery, one batch send
//     per 10 items of fan-out. A refused acquisition is counted twice: on
//     the lease port alone (1 write), and as shipped, through
//     lease.Counting, which adds 1 write of the contention record.
//  2. Lease acquire and release latency (p50, p99) and throughput with 1, 8
//     and 64 contenders on one job, against raw conditional writes of new
//     records (PutItem with attribute_not_exists; SQLite INSERT … ON
//     CONFLICT DO UPDATE … WHERE) by as many writers. Then the same
//     counts as callers that want the lease do it (each a lease.Contender
//     that acquires, releases at once and asks again), in forty rounds of
//     200 ms per count (after a 50 ms lead-in, whose acquisitions count in
//     the calls but not in the rates: the waits that ended while the
//     other counts ran all call then) that alternate the counts after one
//     raw writer, every other round in the reverse order: calls per acquisition (goal
//     ≤ 5), acquisitions/s (medians of the rounds) against one writer's
//     raw writes ÷ 2, refused calls' latency, and acquisitions/s with 64
//     contenders ÷ with 8 in the same round, the median of the rounds
//     (goal ≥ 1; both counts' medians and their ratio beside it).
//  3. Fan-out of 10,000 items by the coordinator, against raw batch sends
//     (SendMessageBatch; a 10-row insert transaction on SQLite) of the same
//     messages to the same endpoint, 4 and 16 in flight. Five rounds
//     alternate the two; each side is the median of its rounds.
//  4. End to end: 10,000 zero-work items through coordinator, queue and
//     consumers, against the raw conditional write rate (measured before
//     and after, at 8 and 64 writers, after an unmeasured warm-up of raw
//     writes and ledger writes) divided by the 2 writes an item needs; and
//     the ledger alone (claim and complete, no queue) against the same
//     reference, to split the gap.
//  5. Freshness: the reference job (7 assets and DXY) with 1.6 s simulated
//     provider latency, tick to all done, against the sequential loop it
//     replaces; and 1,000 assets at 200 ms with 100 consumers against the
//     ideal ⌈1000/100⌉ × 200 ms.
//  6. Lambda artifacts: bootstrap sizes, time from process start to the
//     first invocation served through the Runtime API, and peak RSS while
//     handling a 10-message batch, against a minimal aws-lambda-go handler
//     built the same way; goals: at most 15 MiB and 50 ms.
//  7. River (PostgreSQL only): 10,000 zero-work items end to end with
//     idempotent completion on baton, on River (riverpgxv5) as shipped and
//     on River tuned for throughput, on the same database, rounds
//     alternated (baton in batches of 100, the queue's limit, River with
//     as many workers as baton has items in flight); round trips per item
//     on each side; beside a bare INSERT … ON CONFLICT and a bare SKIP
//     LOCKED dequeue; and idle to done, enqueue → done of one item at a
//     time on an idle system, p50 and p99, beside River (see river.go for
//     the set-up of each side).
//  8. Scale: whole ticks of zero-work runs, of two kinds of job: a
//     catalog of N assets (the job's definition holds the N names, so
//     both processes do), and a run-time list of N items (baton.Job.Items
//     with ExpectedItems N: an items function that serves pages of 1,000
//     names and holds none; the coordinator stores and sends the list a
//     page at a time, the consumers read the pages they check against
//     through a cache of at most 512 pages and 8 MiB). On the embedded
//     store, catalogs of 10,000 and 100,000 items and run-time lists of
//     10,000, 100,000 and 1,000,000, with the coordinator and the
//     consumers each in a process of its own (the bench binary run again
//     in a role, TestScaleRole), so that each role's peak RSS (its VmHWM,
//     which it reports) is its own: tick → all enqueued (the last shard
//     message expanded, in a hierarchical fan-out; for a run-time list,
//     the coordinator's last message), tick → all done, items/s against
//     the raw conditional write rate ÷ 2, and each role's peak RSS
//     against the smallest size's of the same kind (goal: within 2×). On
//     the emulators, 100,000 items of each kind with 100 consumers' worth
//     of concurrency behind the DynamoDB throttling proxy
//     (lab/ddbthrottle, DynamoDB's per-partition limits): the same
//     times, the hottest partition key's peak write and read units in one
//     second against the limits (for the run-time list, the hottest item
//     partition key too: its items are partitioned by page), the
//     throttled requests, units and calls per item; then a smaller run
//     with every item in one partition key, the layout before item
//     partitions, for contrast.
//  9. Cost: the AWS list-price cost per million items of the emulator
//     scale run (Prices, ListPrices: us-east-1, with their sources and
//     the date they were confirmed), from its counts: the proxy's write
//     and read units (write units per started KB, read units per started
//     4 KB, half for an eventually consistent read), the SQS requests as
//     SQS bills them (every attempt of every action, the pollers' empty
//     receives included, each 64 KB chunk of a payload one request:
//     awscall.Counter.Billed), one Lambda request per consumer batch plus
//     the coordinator's invocation, and their GB-seconds at the
//     template's 256 MB. The durations are priced twice. As measured on
//     the emulators (each invocation rounded up to 1 ms) they are an
//     upper bound: each batch waits on single-threaded Node.js servers
//     under load. The scale run's tick runs twice, in per-item mode
//     (one item message per item) and in bulk mode (baton.Job.Bulk: the
//     consumers run the shard messages' items in place), each priced
//     from its own counts, with its SQS requests, write units and Lambda
//     requests per item, and bulk mode's tick → all done beside per-item
//     mode's in scenario 8. The goal line judges bulk mode's no-op
//     figure (per-item mode's is kept beside it, and prices the anchors
//     below), each
//     invocation at AWS's latency (Latency, AWSLatency): its own time
//     (none of its calls outstanding) divided by the vCPU share 256 MB
//     buys, plus the calls of its longest chain of sequential calls at a
//     cited latency per call, plus 1 ms of rounding. Beside them, Step
//     Functions Distributed Map (Standard and Express) and Powertools
//     idempotency doing the same work, each priced from the same counts
//     by the formula its row states (Anchors).
//  10. Contended: one lease held while 8 and 64 contenders ask for it,
//     behind the throttling proxy: refused acquisitions' latency, rate,
//     calls and write units each, and the lease partition key's peak,
//     against raw conditional writes of as many writers.
//  15. Locks (Locks; PostgreSQL and the emulators): batonlock against
//     the reference lock of the engine, rounds alternated. On the
//     emulators the reference is dynamolock's protocol, reproduced
//     (dynamolock.go; the module proxy does not serve
//     cirello.io/dynamolock): acquisitions/s at 1, 8 and 64 distinct
//     keys, calls per free acquisition, the takeover of an expired
//     holder (calls and time), and one hot key with 64 contenders that
//     wait with the same jittered backoff; goals ≥ 2×, ≤ 1 call, 1 call,
//     ≥ 1×. On PostgreSQL a bare pg_try_advisory_lock session lock, as a
//     reference without goals. Alone:
//     -report.only '^15 locks' (about 5 minutes).
//  12. Priority (embedded store only): 6,000 urgent items queued with
//     2,000 bulk ones in two priority classes of one pool (shares 6/8 and
//     2/8): the bulk class's part of the completions while both have
//     items, against its share, and the urgent class's part of the first
//     tenth (Priority).
//
// Figures are wall times on a shared machine: they move with its load. The
// references move with it too, which is why every figure is read as a
// ratio to a reference measured seconds apart, interleaved with it where
// the scenario allows.
//
// The report runs as a test binary (the emulators are test support),
// built in the lab module (lab/, a module of its own so that baton's
// go.mod carries none of the lab's dependencies) and run from the
// repository's root, as `make bench` does:
//
//	(cd lab && go test -c -o ../bin/bench.test ./bench)
//	bin/bench.test -test.run '^TestReport$' -report [-report.only REGEXP] [-report.out bin/bench.md]
//
// In report mode standard output holds the table alone; -report.out
// writes it to a file too, and the rows that have a goal, met or not, to
// a second file beside it (bin/bench-goals.md: GoalsMarkdown). The cost
// rows alone, from a smaller emulator run:
//
//	bin/bench.test -test.run '^TestReport$' -report -report.only '^8 scale on aws \(dynalite' -report.scale.aws 20000
//
// Without -report the package's tests run every scenario at a tiny size
// instead.
package bench
