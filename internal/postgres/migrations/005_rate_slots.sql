-- Slots of in-flight rate limits (ratelimit.Store Hold/Free): one row
-- per (limit, slot), held by holder until until (unix nanoseconds; 0:
-- free).
CREATE TABLE baton_rate_slots (
    name   TEXT    NOT NULL,
    slot   INTEGER NOT NULL,
    holder TEXT    NOT NULL,
    until  BIGINT  NOT NULL,
    PRIMARY KEY (name, slot)
);
