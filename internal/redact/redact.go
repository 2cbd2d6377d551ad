// Package redact hides secrets in what the service logs and reports.
package redact

import "strings"

// URL returns s with what follows the user name in its user information
// replaced by "xxxxx", as url.URL.Redacted does, also when s does not parse
// as a URL (the password may be why).
func URL(s string) string {
	start, end, ok := userinfo(s)
	if !ok {
		return s
	}
	user, _, hasPassword := strings.Cut(s[start:end], ":")
	if !hasPassword {
		return s
	}
	return s[:start] + user + ":xxxxx" + s[end:]
}

// userinfo returns where the user information of a URL is: from "//" to the
// last "@". That is more than the user information when a query holds an
// "@", never less, even when the URL does not parse.
func userinfo(s string) (start, end int, ok bool) {
	i := strings.Index(s, "//")
	at := strings.LastIndex(s, "@")
	if i < 0 || at < i+2 {
		return 0, 0, false
	}
	return i + 2, at, true
}
