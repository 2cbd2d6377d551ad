-- One row that a readiness check writes: a store that cannot write (a
-- full disk, a read-only file, a lock held elsewhere) is not ready, though
-- it may still read.
CREATE TABLE ready_probe (
    id INTEGER NOT NULL PRIMARY KEY,
    at INTEGER NOT NULL                     -- Unix microseconds
) STRICT;
