// Package requestid carries a request's id through its context, so that
// every log line written while serving the request can name it.
package requestid

import (
	"context"

	"github.com/google/uuid"
)

// Header is the HTTP header a request id travels in, both ways.
const Header = "X-Request-Id"

// maxLen bounds an id a client may choose.
const maxLen = 128

type key struct{}

// With returns ctx carrying id.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, key{}, id)
}

// From is the id ctx carries, or "".
func From(ctx context.Context) string {
	id, _ := ctx.Value(key{}).(string)
	return id
}

// Valid reports whether a client's id may be used as given: 1 to 128
// letters, digits and "-", "_", ".", ":" (a UUID, a ULID, a hex trace id).
// Anything else could forge log lines or headers.
func Valid(id string) bool {
	if id == "" || len(id) > maxLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}

// New makes an id for a request that brought none, or a malformed one.
func New() string { return uuid.NewString() }
