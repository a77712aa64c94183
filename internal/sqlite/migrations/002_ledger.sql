-- One row per tick: its current generation.
CREATE TABLE runs (
    job         TEXT    NOT NULL,
    nominal     INTEGER NOT NULL, -- unix nanoseconds, UTC
    generation  INTEGER NOT NULL,
    state       TEXT    NOT NULL,
    cursor      INTEGER NOT NULL DEFAULT 0,
    total       INTEGER NOT NULL DEFAULT 0,
    fence       INTEGER NOT NULL,
    opened_at   INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    finished_at INTEGER NOT NULL DEFAULT 0,
    succeeded   INTEGER NOT NULL DEFAULT 0,
    dead        INTEGER NOT NULL DEFAULT 0,
    cancelled   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job, nominal)
) STRICT, WITHOUT ROWID;

-- One row per item of a generation, keyed by the idempotency key's parts.
-- Every write is one row of one b-tree (WITHOUT ROWID, no secondary index):
-- ListItems reads by key prefix, nothing reads by state.
CREATE TABLE items (
    run         TEXT    NOT NULL, -- RunID string: job@time#generation
    asset       TEXT    NOT NULL,
    state       TEXT    NOT NULL,
    owner       TEXT    NOT NULL DEFAULT '',
    attempt     INTEGER NOT NULL DEFAULT 0,
    lease_until INTEGER NOT NULL DEFAULT 0,
    fence       INTEGER NOT NULL DEFAULT 0,
    error       TEXT    NOT NULL DEFAULT '',
    result      BLOB,
    created_at  INTEGER NOT NULL,
    started_at  INTEGER NOT NULL DEFAULT 0,
    finished_at INTEGER NOT NULL DEFAULT 0,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (run, asset)
) STRICT, WITHOUT ROWID;
