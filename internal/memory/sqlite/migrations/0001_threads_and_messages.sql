-- Threads and their messages. Times are Unix microseconds, UTC.
CREATE TABLE threads (
    id          TEXT    NOT NULL PRIMARY KEY,
    resource_id TEXT    NOT NULL,           -- the owner; '' for none
    title       TEXT    NOT NULL DEFAULT '',
    metadata    TEXT    NOT NULL DEFAULT '{}',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    last_seq    INTEGER NOT NULL DEFAULT 0  -- seq of the last message; messages are 1..last_seq
) STRICT;

-- A resource's threads, newest first, by creation or by activity.
CREATE INDEX threads_resource_created ON threads (resource_id, created_at, id);
CREATE INDEX threads_resource_updated ON threads (resource_id, updated_at, id);

CREATE TABLE messages (
    thread_id  TEXT    NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    id         TEXT    NOT NULL,
    role       TEXT    NOT NULL,
    text       TEXT    NOT NULL,
    parts      TEXT    NOT NULL,            -- JSON array of UI parts
    model      TEXT,                        -- JSON array of model messages (replies only)
    pending    INTEGER NOT NULL DEFAULT 0,
    run_id     TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    -- The last N messages of a thread are one backward range scan of this
    -- key, whatever the thread's length.
    PRIMARY KEY (thread_id, seq),
    UNIQUE (thread_id, id)
) STRICT;

-- Messages waiting for a reply are few; the index holds only them.
CREATE INDEX messages_pending ON messages (thread_id) WHERE pending = 1;
