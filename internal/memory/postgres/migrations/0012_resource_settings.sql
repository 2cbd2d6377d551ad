-- What is set of a resource apart from its memory: whether its user is a
-- minor (docs/safety.md). A row a resource that was ever set; erasing the
-- resource leaves it, so that a minor cannot lift the mark by erasure.
CREATE TABLE resource_settings (
    resource_id text        NOT NULL PRIMARY KEY,
    minor       boolean     NOT NULL DEFAULT false,
    updated_at  timestamptz NOT NULL
);
