package postgres

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// RenewLeases renews the leases of the store's turns now, as its renewer
// does every Lease/3.
func (s *Store) RenewLeases(ctx context.Context) error { return s.renewLeases(ctx) }

// KnownSQL is the statement that finds which of a turn's message ids a
// thread already holds.
const KnownSQL = knownSQL

// The statements of a turn, for TestPlansOutlastTinyTables.
const (
	ThreadSQL   = threadSQL
	TailSQL     = tailSQL
	AnsweredSQL = answeredSQL
	NumberSQL   = numberSQL
	UsedSQL     = usedSQL
	IndexSQL    = indexSQL
)

var InsertMessageSQL = insertMessageSQL

// SearchSQL is Search's statement, ResourceSizeSQL what it tells a
// history ranked whole from a longer one by.
var (
	SearchSQL       = searchSQL
	ResourceSizeSQL = resourceSizeSQL
)

// Pool is the connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// PresenceKey is the key of the instance's presence lock now, 0 for none.
func (s *Store) PresenceKey() int32 { return s.presence.key.Load() }

// ResourceLexeme is the lexeme of a resource in the recall index.
func ResourceLexeme(resourceID string) string { return resourceLexeme(resourceID) }

// AroundSQL is Around's statement, NearestSQL the one that reads a
// vector search's nearest messages.
var AroundSQL = aroundSQL

const NearestSQL = nearestSQL
