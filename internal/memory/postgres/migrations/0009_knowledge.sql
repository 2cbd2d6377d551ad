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
