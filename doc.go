// Package baton is the vocabulary of scheduled fan-out jobs: a [Job] is a
// schedule, its items and a [Processor], which consumers call with a
// [Task] for each item of each tick's run, never losing an item nor
// committing its result twice. A [Catalog] is the jobs one deployment
// runs; the public packages serve it: batonlambda (the AWS Lambda
// functions), batonhttp (HTTP handlers for containers), batoncli (the
// operator CLI and local runtime), batonclient (submissions from Go),
// batonlock (fenced locks on any key), batontest (testing a processor),
// engines (how a binary chooses its engines) with engines/sqlite,
// engines/postgres and engines/aws (imported blank, each links one) and
// examples/fx (the reference job), all under github.com/batonhq/baton.
//
// The guides are in the repository's docs/. baton is pre-1.0: the API may
// change between minor versions; a new field's zero value keeps today's
// behaviour.
package baton
