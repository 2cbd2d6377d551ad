-- Working memory: what is known of a resource (scope 'resource', key the
-- resource's id) or of one thread (scope 'thread', key the thread's id), in
-- versions; the highest is current.
CREATE TABLE working_memory (
    scope       text        NOT NULL,
    key         text        NOT NULL,
    version     bigint      NOT NULL,        -- 1, 2, 3, ...
    resource_id text        NOT NULL,        -- the owner, for erasing a resource
    content     text        NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (scope, key, version)
);

CREATE INDEX working_memory_resource ON working_memory (resource_id);

-- The recall index: one row a message, kept in the transaction that stores
-- the message, deleted with it. doc holds the message's words (weight A),
-- those of the messages right before and after it in its thread (weight D,
-- "near": a question's words are often in the neighbouring turn), and one
-- lexeme naming the resource ('r', the hex of its id, '0'), which a search
-- requires, so that the GIN index finds a resource's matches without a
-- look at the table. id grows as messages are stored: a resource's newest
-- messages are its highest ids (memory/rank.go: common words are looked
-- for in those alone).
CREATE FUNCTION search_doc(resource_id text, body text, near text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT setweight(to_tsvector('english', body), 'A')
        || setweight(to_tsvector('english', near), 'D')
        || ('r' || encode(convert_to(resource_id, 'UTF8'), 'hex') || '0')::tsvector
$$;

CREATE TABLE message_search (
    id          bigint   GENERATED ALWAYS AS IDENTITY,
    thread_id   text     NOT NULL,
    seq         bigint   NOT NULL,
    resource_id text     NOT NULL,
    doc         tsvector NOT NULL,
    PRIMARY KEY (thread_id, seq),
    FOREIGN KEY (thread_id, seq) REFERENCES messages (thread_id, seq) ON DELETE CASCADE
);

CREATE INDEX message_search_doc ON message_search USING gin (doc);
-- A resource's newest messages; erasing a resource.
CREATE INDEX message_search_recent ON message_search (resource_id, id);

-- The messages stored before this migration, joined as a scan would.
SET LOCAL enable_seqscan = on;
INSERT INTO message_search (thread_id, seq, resource_id, doc)
SELECT m.thread_id, m.seq, t.resource_id, search_doc(t.resource_id, m.text, coalesce(p.text, '') || ' ' || coalesce(n.text, ''))
FROM messages m
JOIN threads t ON t.id = m.thread_id
LEFT JOIN messages p ON p.thread_id = m.thread_id AND p.seq = m.seq - 1
LEFT JOIN messages n ON n.thread_id = m.thread_id AND n.seq = m.seq + 1
ORDER BY m.created_at, m.thread_id, m.seq;
