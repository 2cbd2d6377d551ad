package sqlite

// KnownSQL is the statement that finds which of a turn's message ids a
// thread already holds.
const KnownSQL = knownSQL
