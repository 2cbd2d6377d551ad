-- What each thread stores, in bytes (text, UI parts and model messages of
-- its messages), so that a turn can be refused before a thread outgrows
-- its limit without summing the thread's messages on every turn.
ALTER TABLE threads ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
UPDATE threads SET bytes = coalesce((
    SELECT sum(length(CAST(text AS BLOB)) + length(CAST(parts AS BLOB)) + coalesce(length(CAST(model AS BLOB)), 0))
    FROM messages WHERE messages.thread_id = threads.id), 0);

-- Tokens used per resource and UTC day, for the daily token quota: every
-- instance sharing the database sees the same count.
CREATE TABLE usage (
    resource_id TEXT    NOT NULL,
    day         TEXT    NOT NULL,           -- YYYY-MM-DD, UTC
    tokens      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (resource_id, day)
) STRICT;
