-- One row per named queue, with its dead-letter policy (shared by every
-- process that opens the queue).
CREATE TABLE queues (
    name         TEXT PRIMARY KEY,
    dead_letter  TEXT    NOT NULL DEFAULT '', -- queue that takes messages past max_receives; '' for none
    max_receives INTEGER NOT NULL DEFAULT 0,  -- 0 when there is no dead-letter policy
    created_at   INTEGER NOT NULL             -- unix nanoseconds
) STRICT;

-- One row per message; a message moved to another queue keeps its row (and id).
CREATE TABLE messages (
    id            INTEGER PRIMARY KEY AUTOINCREMENT, -- the message id; send order
    queue         TEXT    NOT NULL REFERENCES queues (name),
    body          BLOB    NOT NULL,
    attributes    TEXT    NOT NULL DEFAULT '',  -- JSON object, '' for none
    sent_at       INTEGER NOT NULL,             -- unix nanoseconds
    visible_at    INTEGER NOT NULL DEFAULT 0,   -- hidden until then; 0 for never received
    receive_count INTEGER NOT NULL DEFAULT 0,   -- receives in the current queue
    receipt       TEXT    NOT NULL DEFAULT '',  -- handle of the latest receive; '' before the first
    moved_from    TEXT    NOT NULL DEFAULT '',  -- queue of the latest move (dead-lettering, redrive)
    moved_at      INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE INDEX messages_by_visibility ON messages (queue, visible_at);
CREATE UNIQUE INDEX messages_by_receipt ON messages (receipt) WHERE receipt != '';
