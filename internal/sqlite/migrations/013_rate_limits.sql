-- Counters of shared rate limit windows (ratelimit.Store): one row per
-- (limit, window, shard), removed once expired.
CREATE TABLE rate_limits (
    name    TEXT    NOT NULL,
    win     INTEGER NOT NULL,
    shard   INTEGER NOT NULL,
    count   INTEGER NOT NULL,
    expires INTEGER NOT NULL, -- unix nanoseconds
    PRIMARY KEY (name, win, shard)
) STRICT, WITHOUT ROWID;
