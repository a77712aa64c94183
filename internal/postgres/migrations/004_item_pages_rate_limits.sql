-- The item pages of runs whose items are computed when they open, and of
-- submissions (ledger.Page): one row per page, written once; items holds
-- ledger.EncodePageItems (versioned by its first byte).
CREATE TABLE baton_item_pages (
    run    TEXT    NOT NULL, -- RunID string
    idx    INTEGER NOT NULL,
    items  BYTEA   NOT NULL,
    final  BOOLEAN NOT NULL,
    resume TEXT    NOT NULL,
    parent TEXT    NOT NULL, -- RunID string of the run whose finish started it, or ''
    at     BIGINT  NOT NULL, -- unix nanoseconds
    PRIMARY KEY (run, idx)
);

-- Counters of shared rate limit windows (ratelimit.Store): one row per
-- (limit, window, shard).
CREATE TABLE baton_rate_limits (
    name    TEXT    NOT NULL,
    win     BIGINT  NOT NULL,
    shard   INTEGER NOT NULL,
    count   INTEGER NOT NULL,
    expires BIGINT  NOT NULL, -- unix nanoseconds
    PRIMARY KEY (name, win, shard)
);

-- Finished runs by the time they finished, for pruning past a job's
-- retention (ledger.Pruner).
CREATE INDEX baton_runs_finished ON baton_runs (finished_at) WHERE finished_at > 0;
