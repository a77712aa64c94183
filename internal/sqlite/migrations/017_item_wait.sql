-- What an item's next attempt waits for (ledger.Item.Wait, item format
-- 2), noted by the consumer when it hands the item's message back
-- delayed: wait_at (unix nanoseconds) is the earliest next attempt,
-- wait_limit and wait_key the rate limit and key it waits on ('' for a
-- retry delay), wait_attempt the item's attempt when noted.
-- Compatibility: rows written before this migration read wait_at 0, which
-- shows no next attempt; a note counts only while the item is FAILED at
-- wait_attempt, so one made stale by an older version's claim never
-- shows.
ALTER TABLE items ADD COLUMN wait_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE items ADD COLUMN wait_limit TEXT NOT NULL DEFAULT '';
ALTER TABLE items ADD COLUMN wait_key TEXT NOT NULL DEFAULT '';
ALTER TABLE items ADD COLUMN wait_attempt INTEGER NOT NULL DEFAULT 0;
