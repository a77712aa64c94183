-- The digest of the item list a submission's current generation was
-- opened with (ledger.Run.Digest), set by the write that opens the
-- generation and kept by resumes: a later submission of the same dedupe
-- key compares its own list's digest with it. Compatibility: runs opened
-- before this migration keep '', which means not known (nothing is
-- compared); the next generation they open sets it.
ALTER TABLE runs ADD COLUMN digest TEXT NOT NULL DEFAULT '';
