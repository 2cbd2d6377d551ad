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
