-- Application locks (batonlock): the same records as the jobs' leases, in
-- tables of their own, so that a lock named like a job is not that job's
-- lease. Rows are never deleted: the fence of a key never goes back.
CREATE TABLE baton_locks (
    job         TEXT   PRIMARY KEY, -- the lock's key
    owner       TEXT   NOT NULL DEFAULT '',
    fence       BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL DEFAULT 0,
    acquired_at BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE baton_lock_contention (
    job          TEXT   PRIMARY KEY,
    count        BIGINT NOT NULL,
    last_at      BIGINT NOT NULL,
    holder       TEXT   NOT NULL,
    holder_fence BIGINT NOT NULL,
    holder_until BIGINT NOT NULL,
    streak_at    BIGINT NOT NULL DEFAULT 0, -- first refusal of the current streak (unix ns; 0: unknown)
    ttl          BIGINT NOT NULL DEFAULT 0  -- the latest refused caller's TTL (ns; 0: unknown)
);

-- The jobs' contention records keep the streak too. Rows written before
-- have 0 (unknown): their streak starts at their next refusal.
ALTER TABLE baton_lease_contention ADD COLUMN streak_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE baton_lease_contention ADD COLUMN ttl BIGINT NOT NULL DEFAULT 0;
