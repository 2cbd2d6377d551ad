-- What is set of a resource apart from its memory: whether its user is a
-- minor (docs/safety.md). A row a resource that was ever set; erasing the
-- resource leaves it, so that a minor cannot lift the mark by erasure.
-- Times are Unix microseconds, UTC.
CREATE TABLE resource_settings (
    resource_id TEXT    NOT NULL PRIMARY KEY,
    minor       INTEGER NOT NULL DEFAULT 0 CHECK (minor IN (0, 1)),
    updated_at  INTEGER NOT NULL
) STRICT;
