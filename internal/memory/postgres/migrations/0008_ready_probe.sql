-- One row that a readiness check writes: a database that cannot write (a
-- full disk, a read-only server) is not ready, though it may still read.
CREATE TABLE ready_probe (
    id integer     NOT NULL PRIMARY KEY,
    at timestamptz NOT NULL
);
