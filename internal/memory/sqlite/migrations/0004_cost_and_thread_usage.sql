-- What runs cost, per resource and day, and the same per thread: the
-- usage route shows both, and -cost-quota reads the first.
ALTER TABLE usage ADD COLUMN cost REAL NOT NULL DEFAULT 0;   -- US dollars

CREATE TABLE thread_usage (
    resource_id TEXT    NOT NULL,
    day         TEXT    NOT NULL,           -- YYYY-MM-DD, UTC
    thread_id   TEXT    NOT NULL,
    tokens      INTEGER NOT NULL DEFAULT 0,
    cost        REAL    NOT NULL DEFAULT 0,
    PRIMARY KEY (resource_id, day, thread_id)
) STRICT;
