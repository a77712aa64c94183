// Package engines documents how a program chooses the engines it links.
//
// Every entry point (batonclient.Options.Engine, batonhttp.OpenBackend,
// batonlock.Options.Engine, the baton CLI's --backend) opens an engine by
// name ("sqlite", "postgres", "aws") or by URL (sqlite:///path/to.db,
// postgres://user:pass@host/db, aws://?table=T&queue=URL), and accepts
// every engine its binary links: each engine registers itself when its
// package is linked, as database/sql drivers do. batonclient and
// batonlock link the three; batonhttp links sqlite and postgres. A program
// adds an engine with a blank import of its package here:
//
//	import _ "github.com/batonhq/baton/engines/aws" // batonhttp on DynamoDB + SQS
//
// An unknown name or scheme is an error that lists the engines linked.
// See docs/engines.md.
package engines
