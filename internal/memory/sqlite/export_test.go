package sqlite

import "database/sql"

// KnownSQL is the statement that finds which of a turn's message ids a
// thread already holds.
const KnownSQL = knownSQL

// DB is the database.
func (s *Store) DB() *sql.DB { return s.db }

var ResourceSizeSQL = resourceSizeSQL
