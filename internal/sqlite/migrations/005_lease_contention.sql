-- One row per job whose lease acquisition was refused at least once: how
-- often, and the latest refusal (for operators: baton status, baton lease show).
CREATE TABLE lease_contention (
    job          TEXT PRIMARY KEY,
    count        INTEGER NOT NULL,
    last_at      INTEGER NOT NULL, -- unix nanoseconds, by the refused caller's clock
    holder       TEXT    NOT NULL, -- owner that held the lease then
    holder_fence INTEGER NOT NULL,
    holder_until INTEGER NOT NULL  -- that holder's expiry, unix nanoseconds
) STRICT;
