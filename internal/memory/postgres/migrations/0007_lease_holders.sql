-- A lease outlives a crashed instance by up to its expiry (30 s), during
-- which its threads answer 409 everywhere. Each instance now holds a
-- session-level advisory lock for as long as it is connected (its
-- presence), and names it in the leases it takes ("<key>:<turn>"); the
-- server drops the lock the moment the instance's connection closes, so a
-- lease whose holder has no presence is free at once. A lease whose owner
-- names no presence (one taken by an older version) is alive until it
-- expires, as before.
CREATE FUNCTION lease_holder_alive(holder text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN holder ~ '^[0-9]{1,10}:' THEN EXISTS (
        SELECT 1 FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND objsubid = 2
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND classid = (hashtext(current_schema() || '/presence') & 2147483647)::oid
          AND objid = split_part(holder, ':', 1)::bigint::oid)
    ELSE true END
$$;
