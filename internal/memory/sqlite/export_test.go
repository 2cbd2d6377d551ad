package sqlite

import "database/sql"

// KnownSQL is the statement that finds which of a turn's message ids a
// thread already holds.
const KnownSQL = knownSQL

// DB is the database.
func (s *Store) DB() *sql.DB { return s.db }

var ResourceSizeSQL = resourceSizeSQL

// ForgetRecall drops the recall index held of resourceID, as a delete of
// one of its threads does.
func (s *Store) ForgetRecall(resourceID string) { s.recall.Dropped(resourceID) }
