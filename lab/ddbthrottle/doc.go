// Package ddbthrottle puts DynamoDB's per-partition limits in front of a
// DynamoDB-compatible server that has none (the local emulator), so that a
// hot partition key shows up in a test or a benchmark the way it would on
// AWS: as ProvisionedThroughputExceededException.
//
// A Proxy is an http.Handler that forwards DynamoDB's JSON protocol to a
// target server. It reads each request's partition key values and charges
// them capacity units the way DynamoDB does:
//
//   - a write costs one write unit per started KB of the item (PutItem: the
//     item sent; UpdateItem: the key and the values the update sends, a
//     lower bound, since the proxy does not read the stored item; DeleteItem:
//     the key), at least 1;
//   - a read costs one read unit per started 4 KB of what it returns, at
//     least 1, half that for an eventually consistent read; a Query is
//     charged on the total size of the items it returns.
//
// Each partition key value (table + value of the partition key attribute)
// may use Options.WriteUnits write units and Options.ReadUnits read units
// per second of the proxy's clock (1,000 and 3,000 by default, DynamoDB's
// per-partition limits). A request that would take a partition past its
// limit in the current second is answered 400 with
// ProvisionedThroughputExceededException and not forwarded; the SDK's
// retryer treats it as DynamoDB's own throttle (it backs off and retries).
// A BatchWriteItem forwards the entries within their partitions' limits and
// returns the others as UnprocessedItems (ProvisionedThroughputExceeded only
// when none fits), as DynamoDB does. Reads are charged after the response
// (their size is known only then), so a partition may end a second over its
// read limit by one request, and its next requests in that second are
// refused.
//
// Stats reports, per partition, the peak units used in any one second and
// the throttles, so a benchmark can print the hottest partition beside the
// limit.
//
// # Semantics
//
// The window is a fixed one-second bucket of Options.Now (the caller's
// clock, so tests can drive time). DynamoDB's adaptive capacity and burst
// credits are not modelled: the proxy is stricter than AWS for short bursts,
// which is what a test of "no hot partition" needs. Table-level limits of
// on-demand tables are not modelled either.
package ddbthrottle
