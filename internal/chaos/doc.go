// Package chaos is baton's chaos suite: it runs many ticks of a job (fx
// and WideAssets more assets: runs of more than a shard) on a backend
// while it injects the failures the design claims to survive, then
// lets the system settle and checks that nothing was lost, applied twice or
// left stuck.
//
// # What a run injects
//
//   - Duplicate deliveries: a share of the messages consumers receive
//     (Config.Duplicates) is handed out twice, half of them as the same
//     delivery given again to a later receive (another batch, while the
//     first may still hold it) and half as a copy sent back to the queue.
//   - Consumers killed mid-item: a share of consumer batches
//     (Config.ConsumerKills) dies at one of the crash windows the consumer
//     has (package consumer): after the claim before processing, after
//     processing before the completion, after the completion before the
//     message is deleted, and after the last input succeeded before the
//     derived item is enqueued. A killed batch writes nothing more, forwards
//     nothing and acknowledges nothing: its messages come back after their
//     visibility timeout. Each in-process consumer kills the first chance of
//     every window once, so that a short run covers them all. Where the
//     harness allows it, consumers also run as operating-system processes
//     sharing the backend (Config.Processes), SIGKILLed at random moments
//     and restarted.
//   - Poison: malformed bodies, unknown jobs and assets, generations never
//     opened, future ticks, ticks without a run and fences no coordinator
//     recorded, about one message in a hundred (Config.Poison), at least
//     one of each kind.
//   - Coordinators killed at random points: every tick is triggered
//     Config.Triggers times at once, and a share of the invocations
//     (Config.CoordinatorKills) dies at a random call to the lease, the
//     ledger or the queue (before or after the call takes effect), leaving
//     its lease held and its fan-out half done. A failed or pending trigger
//     is retried, as Lambda and the scheduler retry.
//   - Forced replays mid-flight (Config.Replays): a new generation of a tick
//     opens while the old one's messages are in flight, and stale copies of
//     old-generation messages are sent once the consumers must know better.
//   - Clock skew: every process and invocation reads a clock offset within
//     half the job's ClockSkew either way, so any two differ by at most the
//     allowance.
//
// # What a run checks
//
// Once the ticks are triggered the injection stops; the consumers keep
// running, a fault-free coordinator passes over the job (as the next
// tick's would) until every run has finished or Config.Settle has passed.
// Then the Report counts:
//
//   - items lost: items of a tick's current run that are not terminal;
//   - effects applied twice: items whose processor application was
//     committed more than once (an application is the processor returning
//     its result after its fenced write; it is committed when the ledger
//     accepted that attempt's completion), and items whose stored effect is
//     not the committed attempt's;
//   - runs stuck: ticks whose run is not complete or partial;
//   - poison dead-lettered with its reason, in per cent of the poison sent;
//   - superseded acknowledged: deliveries of an older generation handled
//     after the newer one was opened (and the consumers' run cache could no
//     longer answer from before it), acknowledged with status superseded,
//     in per cent.
//
// The goals are 0, 0, 0, 100 % and 100 %. For information, the report
// also counts the finished runs a consumer finished (the one that ended
// the last item of the last shard) rather than a coordinator's settling
// pass. Every consumer process keeps a
// journal (one file each, appended line by line, so a SIGKILL loses at most
// the record being written) of its applications, commits, outcomes and
// injections; the report reads the journals and the backend.
//
// # Engines
//
// A Harness is one engine: how to make fresh resources and how to open a
// backend on them from any process. Adding an engine to the suite is adding
// its Harness to the list the tests run.
package chaos
