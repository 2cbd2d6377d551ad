-- turn_holds checks that a turn's lease on a thread is still its own and
-- raises (SQLSTATE CL001) when it is not, so that a write pipelined behind
-- it in the same transaction is rolled back with it: a turn's writes need
-- no round trip of their own to learn whether they may go on. With release
-- it drops the lease, which the transaction's commit makes final; without,
-- it keeps the lease locked until the transaction ends.
CREATE FUNCTION turn_holds(thread text, holder text, release boolean) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF release THEN
        DELETE FROM thread_leases WHERE thread_id = thread AND owner = holder;
    ELSE
        PERFORM 1 FROM thread_leases WHERE thread_id = thread AND owner = holder FOR UPDATE;
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'the turn''s lease on thread % was lost', thread USING ERRCODE = 'CL001';
    END IF;
END
$$;
