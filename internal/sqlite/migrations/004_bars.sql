-- The reference workload's bars, keyed by (asset, minute); writes fenced by (fence, attempt).
CREATE TABLE bars (
    asset      TEXT    NOT NULL,
    minute     INTEGER NOT NULL, -- unix nanoseconds of the minute's start
    open       REAL    NOT NULL,
    high       REAL    NOT NULL,
    low        REAL    NOT NULL,
    close      REAL    NOT NULL,
    fence      INTEGER NOT NULL,
    attempt    INTEGER NOT NULL,
    written_at INTEGER NOT NULL,
    PRIMARY KEY (asset, minute)
) STRICT;
