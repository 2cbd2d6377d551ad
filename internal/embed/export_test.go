package embed

// Stem is stem, for the tests.
var Stem = stem
