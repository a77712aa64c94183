-- The item shards of each run's current generation (ledger.Run.Shards),
-- fixed when the generation opens, and the settle marks: one row per node
-- of a run's settle tree that has ended (level 0: a shard), written once.
-- Compatibility: runs opened by earlier versions keep 0 shards and settle
-- as one shard.
ALTER TABLE runs ADD COLUMN shards INTEGER NOT NULL DEFAULT 0;

CREATE TABLE marks (
    run       TEXT    NOT NULL, -- RunID string: job@time#generation
    level     INTEGER NOT NULL,
    idx       INTEGER NOT NULL,
    succeeded INTEGER NOT NULL,
    dead      INTEGER NOT NULL,
    cancelled INTEGER NOT NULL,
    at        INTEGER NOT NULL, -- unix nanoseconds
    PRIMARY KEY (run, level, idx)
) STRICT, WITHOUT ROWID;
