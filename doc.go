// Package baton is scheduled fan-out work you can trust on serverless: the
// vocabulary a user writes jobs in.
//
// A [Job] names a schedule (or none: it then runs only on demand, by
// submissions, or by a [Chain] from another job's finished run), the
// assets every run processes, the derived items computed from them
// (fan-in), its [Limits] and its [Processor]. On every tick of the
// schedule a coordinator takes a fenced lease for the
// job, opens the tick's run (one per tick, however many triggers arrive)
// and enqueues one message per asset; consumers claim each item with its
// idempotency key ([ItemKey]) and call the processor with a [Task]; a
// derived item runs once all its inputs have succeeded (derived items may
// take derived items as inputs: a graph of any depth). A long item renews
// its claim with [Task.Heartbeat]; cancelling an item stops the processor
// working on it (its context ends with [ErrCancelled]). Duplicate
// triggers, crashes, redeliveries and replays never lose an item and never
// commit an item's result twice. [Task.Effects] carries those guarantees
// into the processor's own writes.
//
// A [Catalog] holds the jobs one deployment runs. The entry points take
// a catalog:
//
//   - package [github.com/batonhq/baton/batonlambda]: the coordinator and
//     consumer AWS Lambda functions (DynamoDB + SQS);
//   - package [github.com/batonhq/baton/batoncli]: the operator CLI and the
//     local runtime (run, invoke, setup, status, replay, dlq, lease, cancel)
//     as a cobra command tree, on the embedded SQLite store or on AWS;
//   - package [github.com/batonhq/baton/batontest]: tasks and an in-memory
//     effect store for testing a processor without a backend.
//
// A user's module defines its jobs, builds a catalog and hands it to those
// entry points; examples/fx is baton's reference job, written the same
// way.
//
// # Stability
//
// baton is pre-1.0: the API may change between minor versions, and
// changes are listed in the release notes. Types grow by addition: new
// fields of Job, Limits and Task keep today's behaviour at their zero
// value.
package baton
