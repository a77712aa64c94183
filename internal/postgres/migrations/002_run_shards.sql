-- The item shards of each run's current generation (ledger.Run.Shards),
-- fixed when the generation opens, and the settle marks: one row per node
-- of a run's settle tree that has ended (level 0: a shard), written once.
-- Compatibility: runs opened before this migration keep 0 shards and
-- settle as one shard.
ALTER TABLE baton_runs ADD COLUMN shards INTEGER NOT NULL DEFAULT 0;

-- A shard is a range of asset names in byte-wise order, whatever the
-- database's default collation: the key's asset compares as "C", so that
-- a shard is a range scan of the primary key.
ALTER TABLE baton_items ALTER COLUMN asset TYPE TEXT COLLATE "C";

CREATE TABLE baton_marks (
    run       TEXT    NOT NULL, -- RunID string: job@time#generation
    level     INTEGER NOT NULL,
    idx       INTEGER NOT NULL,
    succeeded INTEGER NOT NULL,
    dead      INTEGER NOT NULL,
    cancelled INTEGER NOT NULL,
    at        BIGINT  NOT NULL, -- unix nanoseconds
    PRIMARY KEY (run, level, idx)
);
