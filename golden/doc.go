// Package golden holds the recorded transcripts of the API: generate bodies
// in generate/ and event streams in stream/, one pair per request of
// golden_test.go, normalised (ids become <id-N>, trace ids <trace-N>, times
// 2000-01-01T00:00:00Z) so that they compare
// byte for byte. `go test ./... -update` or `make golden` rewrites them;
// review the diff before committing.
package golden
