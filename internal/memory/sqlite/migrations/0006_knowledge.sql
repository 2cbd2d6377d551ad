-- Working memory: what is known of a resource (scope 'resource', key the
-- resource's id) or of one thread (scope 'thread', key the thread's id), in
-- versions; the highest is current. Times are Unix microseconds, UTC.
CREATE TABLE working_memory (
    scope       TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    version     INTEGER NOT NULL,           -- 1, 2, 3, ...
    resource_id TEXT    NOT NULL,           -- the owner, for erasing a resource
    content     TEXT    NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (scope, key, version)
) STRICT;

CREATE INDEX working_memory_resource ON working_memory (resource_id);

-- The recall index: full-text search over every message, kept in the
-- transaction that stores the message. Contentless (the text is in
-- messages), its rowid the message's. Columns: res, one token naming the
-- thread's resource ('r', the hex of its id, '0': letters and digits that
-- the porter stemmer leaves as they are), which a search requires; the
-- message's text; near, the text of the messages right before and after
-- it in its thread (a question's words are often in the neighbouring turn).
CREATE VIRTUAL TABLE messages_fts USING fts5 (
    res, text, near,
    content = '', contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

INSERT INTO messages_fts (rowid, res, text, near)
SELECT m.rowid, 'r' || lower(hex(t.resource_id)) || '0', m.text,
       coalesce(p.text, '') || ' ' || coalesce(n.text, '')
FROM messages m
JOIN threads t ON t.id = m.thread_id
LEFT JOIN messages p ON p.thread_id = m.thread_id AND p.seq = m.seq - 1
LEFT JOIN messages n ON n.thread_id = m.thread_id AND n.seq = m.seq + 1;
