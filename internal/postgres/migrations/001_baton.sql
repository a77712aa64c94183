-- baton's tables, prefixed baton_ so that they can share a database (and
-- its search_path) with other software. Times are BIGINT Unix nanoseconds
-- (0 = none): comparisons inside conditional statements are exact to the
-- nanosecond, as the ports require, where timestamptz keeps microseconds.

-- Leases: one row per job. owner = '' means free; fence survives releases.
CREATE TABLE baton_leases (
    job         TEXT   PRIMARY KEY,
    owner       TEXT   NOT NULL DEFAULT '',
    fence       BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL DEFAULT 0,
    acquired_at BIGINT NOT NULL DEFAULT 0
);

-- Refused lease acquisitions per job, for operators.
CREATE TABLE baton_lease_contention (
    job          TEXT   PRIMARY KEY,
    count        BIGINT NOT NULL,
    last_at      BIGINT NOT NULL,
    holder       TEXT   NOT NULL,
    holder_fence BIGINT NOT NULL,
    holder_until BIGINT NOT NULL
);

-- Runs: one row per tick, holding its current generation.
CREATE TABLE baton_runs (
    job         TEXT    NOT NULL,
    nominal     BIGINT  NOT NULL,
    generation  INTEGER NOT NULL,
    state       TEXT    NOT NULL,
    cursor      INTEGER NOT NULL DEFAULT 0,
    total       INTEGER NOT NULL DEFAULT 0,
    fence       BIGINT  NOT NULL,
    open_fence  BIGINT  NOT NULL DEFAULT 0,
    opened_at   BIGINT  NOT NULL,
    updated_at  BIGINT  NOT NULL,
    finished_at BIGINT  NOT NULL DEFAULT 0,
    succeeded   INTEGER NOT NULL DEFAULT 0,
    dead        INTEGER NOT NULL DEFAULT 0,
    cancelled   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job, nominal)
);

-- Items: one row per item of a generation, keyed by the idempotency key's
-- parts. Nothing reads by state, so the primary key is the only index.
CREATE TABLE baton_items (
    run         TEXT    NOT NULL, -- RunID string: job@time#generation
    asset       TEXT    NOT NULL,
    state       TEXT    NOT NULL,
    owner       TEXT    NOT NULL DEFAULT '',
    attempt     INTEGER NOT NULL DEFAULT 0,
    lease_until BIGINT  NOT NULL DEFAULT 0,
    fence       BIGINT  NOT NULL DEFAULT 0,
    error       TEXT    NOT NULL DEFAULT '',
    result      BYTEA,
    created_at  BIGINT  NOT NULL,
    started_at  BIGINT  NOT NULL DEFAULT 0,
    finished_at BIGINT  NOT NULL DEFAULT 0,
    updated_at  BIGINT  NOT NULL,
    PRIMARY KEY (run, asset)
);

-- Queues: one row per named queue, with its dead-letter policy.
CREATE TABLE baton_queues (
    name         TEXT    PRIMARY KEY,
    dead_letter  TEXT    NOT NULL DEFAULT '',
    max_receives INTEGER NOT NULL DEFAULT 0,
    created_at   BIGINT  NOT NULL
);

-- Messages: a message moved to another queue keeps its row (and id).
CREATE TABLE baton_messages (
    id            BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue         TEXT    NOT NULL REFERENCES baton_queues (name) ON DELETE CASCADE,
    body          BYTEA   NOT NULL,
    attributes    TEXT    NOT NULL DEFAULT '', -- JSON object, '' for none
    sent_at       BIGINT  NOT NULL,
    visible_at    BIGINT  NOT NULL DEFAULT 0,  -- hidden until then; 0 for never received
    receive_count INTEGER NOT NULL DEFAULT 0,  -- receives in the current queue
    receipt       TEXT    NOT NULL DEFAULT '', -- handle of the latest receive
    moved_from    TEXT    NOT NULL DEFAULT '',
    moved_at      BIGINT  NOT NULL DEFAULT 0
);
CREATE INDEX baton_messages_by_visibility ON baton_messages (queue, visible_at, id);

-- The jobs' fenced effect stores (internal/effect).
CREATE TABLE baton_effects (
    job        TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    value      BYTEA   NOT NULL,
    generation INTEGER NOT NULL,
    attempt    INTEGER NOT NULL,
    written_at BIGINT  NOT NULL,
    PRIMARY KEY (job, key)
);
