-- The trace id of the span that opened a run's current generation
-- (ledger.Run.TraceID), set by the write that opens the generation and
-- kept by resumes: the dashboard links the run, and its items, to their
-- trace. Compatibility: runs opened before this migration keep '', which
-- means not known (the dashboard shows none); the next generation they
-- open sets it.
ALTER TABLE runs ADD COLUMN trace_id TEXT NOT NULL DEFAULT '';
