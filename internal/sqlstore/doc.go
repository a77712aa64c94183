// Package sqlstore is what the SQL engines, internal/sqlite and
// internal/postgres, share beyond their dialects: the Go half of each
// store, written once, in the manner of database/sql over its drivers.
//
// # What lives here
//
//   - The stored encodings: times as Unix nanoseconds, 0 for the zero
//     time (Nanos, Time, SameTime); message attributes as a JSON object
//     (EncodeAttributes); receipt handles as "<random>-<message id>"
//     (ReceiptPrefix, ReceiptID).
//   - Row → record decoding, with the column lists every engine's schema
//     shares next to the scans that read them in order (RunColumns and
//     ScanRun, ItemColumns and ItemRow, MarkColumns, LeaseColumns,
//     ContentionColumns, PauseColumns, EffectColumns,
//     StoredMessageColumns), so that a list and its scan cannot drift
//     apart. A scan takes a ScanFunc (any driver's row Scan); a read that
//     may find no row takes a ReadFunc, which reports found = false.
//   - The decisions that do not depend on the SQL: which parameters a
//     port rules out (CheckLeaseParams, CheckMark, CheckSlot,
//     CheckQueueOpen, VisibilityChange), what a write's outcome means to
//     the caller, including one sent again after an unknown outcome
//     (MarkDone, DeleteOutcome), and the listing bounds (ListLimit,
//     RunsBefore).
//   - Whole operations over a narrow interface of statements: the effect
//     store (EffectStore over EffectDB), the rate limit store
//     (RateLimitStore over RateLimitDB), the lease store's pause flag
//     (Pauses over PauseDB), the ledger's prune loop (RunPruner over
//     PruneDB) and a queue's long poll (LongPoll over a LookFunc). An
//     engine returns the store, or embeds the type in its own.
//   - The shapes operators see (StoredMessage, Peek).
//
// # What stays per engine
//
// Every SQL statement, explicit and in its engine's dialect, in the
// engine's package: each engine has one unexported statements type that
// implements the XxxDB interfaces, a method per statement or per
// statement and its read. Also per engine: how a statement runs
// (SQLite's single writer and prepared statements, PostgreSQL's
// pipelined batches and its retries after a lost connection), how the
// engine's errors are translated, and whether a write's outcome can be
// unknown (only PostgreSQL's: its XxxDB methods say so, as MarkWrite's
// Unsure). Transitions whose reads and writes interleave differently per
// engine (the ledger's runs and items, lease acquisition, a queue's
// receive) keep their flow in the engine and share their decoding and
// checks from here.
//
// Nothing here runs SQL or imports a driver, and neither engine is
// imported: the engines import sqlstore.
package sqlstore
