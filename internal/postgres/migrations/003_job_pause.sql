-- One row per job ever paused (lease.Pauser): whether it is paused, the
-- latest pause's window, who and why, and the ticks it skipped.
CREATE TABLE baton_job_pause (
    job          TEXT    PRIMARY KEY,
    paused       BOOLEAN NOT NULL,
    since        BIGINT  NOT NULL, -- unix nanoseconds: the latest pause began
    until        BIGINT  NOT NULL, -- unix nanoseconds: it ended (0 while paused)
    by_whom      TEXT    NOT NULL,
    reason       TEXT    NOT NULL,
    skipped      BIGINT  NOT NULL, -- distinct ticks skipped in the latest pause
    last_skipped BIGINT  NOT NULL  -- unix nanoseconds: nominal time of the newest (0: none)
);
