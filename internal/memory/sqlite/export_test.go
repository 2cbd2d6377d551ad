package sqlite

import (
	"database/sql"

	"github.com/companionhq/companion/internal/memory/bm25"
)

// KnownSQL is the statement that finds which of a turn's message ids a
// thread already holds.
const KnownSQL = knownSQL

// DB is the database.
func (s *Store) DB() *sql.DB { return s.db }

// ForgetRecall drops the recall index held of resourceID, as a delete of
// one of its threads does.
func (s *Store) ForgetRecall(resourceID string) { s.recall.Dropped(resourceID) }

// HoldRecall bounds the messages of the recall indexes the store holds
// (bm25.Cache); a history past it, and past memory.SearchExactMessages,
// is searched in the full-text index.
func (s *Store) HoldRecall(max int) { s.recall = bm25.NewCache(max) }

// RecallHeld reports whether the store holds the recall index of
// resourceID.
func (s *Store) RecallHeld(resourceID string) bool { return s.recall.Cached(resourceID) != nil }
