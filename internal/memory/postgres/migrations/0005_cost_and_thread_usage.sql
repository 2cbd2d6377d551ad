-- What runs cost, per resource and day, and the same per thread: the
-- usage route shows both, and -cost-quota reads the first.
ALTER TABLE usage ADD COLUMN cost double precision NOT NULL DEFAULT 0;   -- US dollars

CREATE TABLE thread_usage (
    resource_id text             NOT NULL,
    day         date             NOT NULL,
    thread_id   text             NOT NULL,
    tokens      bigint           NOT NULL DEFAULT 0,
    cost        double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (resource_id, day, thread_id)
);
