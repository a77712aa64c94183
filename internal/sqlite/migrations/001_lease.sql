-- One row per job. owner = '' means free; fence survives releases.
CREATE TABLE leases (
    job         TEXT PRIMARY KEY,
    owner       TEXT    NOT NULL DEFAULT '',
    fence       INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL DEFAULT 0, -- unix nanoseconds, 0 when free
    acquired_at INTEGER NOT NULL DEFAULT 0
) STRICT;
