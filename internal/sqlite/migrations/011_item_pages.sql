-- The item pages of runs whose items are computed when they open
-- (ledger.Page): one row per page, written once. items holds
-- ledger.EncodePageItems (versioned by its first byte).
CREATE TABLE item_pages (
    run    TEXT    NOT NULL, -- RunID string: job@time#generation
    idx    INTEGER NOT NULL,
    items  BLOB    NOT NULL,
    final  INTEGER NOT NULL, -- 0 or 1
    resume TEXT    NOT NULL,
    parent TEXT    NOT NULL, -- RunID string of the run whose finish started it, or 
    at     INTEGER NOT NULL, -- unix nanoseconds
    PRIMARY KEY (run, idx)
) STRICT, WITHOUT ROWID;
