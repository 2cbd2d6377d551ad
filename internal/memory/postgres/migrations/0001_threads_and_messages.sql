-- Threads and their messages.
CREATE TABLE threads (
    id          text        NOT NULL PRIMARY KEY,
    resource_id text        NOT NULL,            -- the owner; '' for none
    title       text        NOT NULL DEFAULT '',
    metadata    jsonb       NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    last_seq    bigint      NOT NULL DEFAULT 0   -- seq of the last message; messages are 1..last_seq
);

-- A resource's threads, newest first, by creation or by activity.
CREATE INDEX threads_resource_created ON threads (resource_id, created_at, id);
CREATE INDEX threads_resource_updated ON threads (resource_id, updated_at, id);

CREATE TABLE messages (
    thread_id  text        NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq        bigint      NOT NULL,
    id         text        NOT NULL,
    role       text        NOT NULL,
    text       text        NOT NULL,
    parts      json        NOT NULL,             -- UI parts, kept as written
    model      json,                             -- model messages (replies only)
    pending    boolean     NOT NULL DEFAULT false,
    run_id     text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL,
    -- The last N messages of a thread are one backward range scan of this
    -- key, whatever the thread's length.
    PRIMARY KEY (thread_id, seq),
    UNIQUE (thread_id, id)
);

-- Messages waiting for a reply are few; the index holds only them.
CREATE INDEX messages_pending ON messages (thread_id) WHERE pending;
