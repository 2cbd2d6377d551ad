-- Messages' vectors, when an embedding model is configured (memory's
-- vectors.go): one a message, made after the message is stored, by a
-- background indexer, deleted with the message. model names the model that
-- made it (vectors of another model are not comparable); an empty vec marks
-- a message the model could not embed. id grows as vectors are stored: a
-- resource's newest vectors are its highest ids.
CREATE TABLE message_vectors (
    id          bigint GENERATED ALWAYS AS IDENTITY,
    thread_id   text   NOT NULL,
    seq         bigint NOT NULL,
    resource_id text   NOT NULL,
    model       text   NOT NULL,
    vec         bytea  NOT NULL,             -- little-endian float32s, a unit vector
    PRIMARY KEY (thread_id, seq),
    FOREIGN KEY (thread_id, seq) REFERENCES messages (thread_id, seq) ON DELETE CASCADE
);

-- A resource's newest vectors, for a search.
CREATE INDEX message_vectors_resource ON message_vectors (resource_id, id);


-- The indexer reads the messages stored after a position, in order. On the
-- expression id + 0, which only that query names: a plain index on id would
-- also be offered to the planner for a search's ranges of id, where the
-- GIN index and message_search_recent serve it better.
CREATE INDEX message_search_order ON message_search ((id + 0));
