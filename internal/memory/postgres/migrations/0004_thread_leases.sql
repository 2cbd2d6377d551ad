-- A turn holds its thread with a lease instead of a session's advisory
-- lock, so that it holds no connection while the model answers: thousands
-- of turns may run at once on a pool of a few connections. The holder
-- renews the lease while the turn lasts; a crashed instance's lease
-- expires.
CREATE TABLE thread_leases (
    thread_id text        NOT NULL PRIMARY KEY,
    owner     text        NOT NULL,
    expires   timestamptz NOT NULL
);
