-- Application locks (batonlock): the same records as the jobs' leases, in
-- tables of their own, so that a lock named like a job is not that job's
-- lease. Rows are never deleted: the fence of a key never goes back.
CREATE TABLE locks (
    job         TEXT PRIMARY KEY, -- the lock's key
    owner       TEXT    NOT NULL DEFAULT '',
    fence       INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL DEFAULT 0,
    acquired_at INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE TABLE lock_contention (
    job          TEXT PRIMARY KEY,
    count        INTEGER NOT NULL,
    last_at      INTEGER NOT NULL,
    holder       TEXT    NOT NULL,
    holder_fence INTEGER NOT NULL,
    holder_until INTEGER NOT NULL,
    streak_at    INTEGER NOT NULL DEFAULT 0, -- first refusal of the current streak (unix ns; 0: unknown)
    ttl          INTEGER NOT NULL DEFAULT 0  -- the latest refused caller's TTL (ns; 0: unknown)
) STRICT;

-- The jobs' contention records keep the streak too. Rows written before
-- have 0 (unknown): their streak starts at their next refusal.
ALTER TABLE lease_contention ADD COLUMN streak_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE lease_contention ADD COLUMN ttl INTEGER NOT NULL DEFAULT 0;
