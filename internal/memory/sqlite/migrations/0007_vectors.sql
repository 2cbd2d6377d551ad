-- Messages' vectors, when an embedding model is configured (memory's
-- vectors.go): one a message, made after the message is stored, by a
-- background indexer, deleted with the message. model names the model that
-- made it (vectors of another model are not comparable); an empty vec marks
-- a message the model could not embed. The table's rowid grows as vectors
-- are stored: a resource's newest vectors are its highest rowids.
CREATE TABLE message_vectors (
    thread_id   TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    resource_id TEXT    NOT NULL,
    model       TEXT    NOT NULL,
    vec         BLOB    NOT NULL,           -- little-endian float32s, a unit vector
    UNIQUE (thread_id, seq),
    FOREIGN KEY (thread_id, seq) REFERENCES messages (thread_id, seq) ON DELETE CASCADE
) STRICT;

-- A resource's newest vectors, for a search.
CREATE INDEX message_vectors_resource ON message_vectors (resource_id);
