-- What each thread stores, in bytes (text, UI parts and model messages of
-- its messages), so that a turn can be refused before a thread outgrows
-- its limit without summing the thread's messages on every turn.
ALTER TABLE threads ADD COLUMN bytes bigint NOT NULL DEFAULT 0;
UPDATE threads SET bytes = coalesce((
    SELECT sum(octet_length(text) + octet_length(parts::text) + coalesce(octet_length(model::text), 0))
    FROM messages WHERE messages.thread_id = threads.id), 0);

-- Tokens used per resource and UTC day, for the daily token quota: every
-- instance sharing the database sees the same count.
CREATE TABLE usage (
    resource_id text   NOT NULL,
    day         date   NOT NULL,             -- UTC
    tokens      bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (resource_id, day)
);
