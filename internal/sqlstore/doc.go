// Package sqlstore is what the SQL engines, internal/sqlite and
// internal/postgres, share beyond their dialects: the Go half of each
// store, written once.
//
// # What lives here
//
//   - The stored encodings: times as Unix nanoseconds (0 for the zero
//     time, Nanos and Time), message attributes as a JSON object
//     (EncodeAttributes), receipt handles as "<random>-<message id>"
//     (ReceiptPrefix, ReceiptID).
//   - Row → record decoding: the column lists every engine's schema
//     shares (RunColumns, ItemColumns, MarkColumns) next to the functions
//     that scan them (ScanRun, ScanItem, ScanMark, ScanLease,
//     ScanContention), so that a column list and its scan cannot drift
//     apart.
//   - The decisions that do not depend on the SQL: which parameters a
//     port rules out (CheckLeaseParams, CheckMark, CheckQueueOpen), what
//     a write's outcome means to the caller (MarkDone, PutEffect,
//     DeleteOutcome), the long poll's schedule (LongPoll) and the prune
//     loop (Prune), each over a callback or a narrow interface that runs
//     the engine's statement.
//   - The shapes operators see (StoredMessage, Peeked).
//
// # What stays per engine
//
// Every SQL statement, explicit and in its engine's dialect, in the
// engine's package; how a statement runs (SQLite's single writer and
// prepared statements, PostgreSQL's pipelined batches and retries after a
// lost connection); how an engine's errors are translated and whether a
// write's outcome can be unknown. Nothing here runs SQL or imports a
// driver, and neither engine is imported: the engines import sqlstore.
package sqlstore
