-- The jobs' fenced effect stores (internal/effect): one row per (job, key),
-- written by the (generation, attempt) of the task that wrote it. A write
-- replaces the row only when its (generation, attempt) is at least the
-- stored pair, compared generation first (see effect.go).
--
-- Compatibility: the bars table (004_bars.sql) stays, with its data, but
-- bars written by earlier versions are no longer read. The reference job
-- writes its bars as effects from this version on.
CREATE TABLE effects (
    job        TEXT    NOT NULL,
    key        TEXT    NOT NULL, -- UTF-8, 1-512 bytes, no NUL; compared byte for byte
    value      BLOB    NOT NULL, -- at most 256 KiB; empty is allowed
    generation INTEGER NOT NULL,
    attempt    INTEGER NOT NULL,
    written_at INTEGER NOT NULL, -- unix nanoseconds, by the writer's clock
    PRIMARY KEY (job, key)
) STRICT;
