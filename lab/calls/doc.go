// Package calls pins the AWS requests baton's adapters make per
// operation, counted on the local emulators by the SDK middleware of
// lab/bench/awscall: the SQS queue's requests per port operation and per
// fan-out, and batonlock's conditional writes on a DynamoDB client of the
// caller's. These counts are what carries over from the emulators to AWS
// (the times do not); the bench report (lab/bench) prices them.
//
// The package has no code of its own: its tests and benchmarks run with
// the lab module's (cd lab && go test ./...), under `make test`.
package calls
