-- One row per job ever paused (lease.Pauser): whether it is paused, the
-- latest pause's window, who and why, and the ticks it skipped.
CREATE TABLE job_pause (
    job          TEXT PRIMARY KEY,
    paused       INTEGER NOT NULL, -- 1 paused, 0 resumed
    since        INTEGER NOT NULL, -- unix nanoseconds: the latest pause began
    until        INTEGER NOT NULL, -- unix nanoseconds: it ended (0 while paused)
    by_whom      TEXT    NOT NULL,
    reason       TEXT    NOT NULL,
    skipped      INTEGER NOT NULL, -- distinct ticks skipped in the latest pause
    last_skipped INTEGER NOT NULL  -- unix nanoseconds: nominal time of the newest (0: none)
) STRICT;
