package redact

import "log/slog"

// Secret is a value that must not be printed, such as an API key: it
// formats and logs as [redacted].
type Secret string

// String implements fmt.Stringer without showing the value.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// LogValue implements slog.LogValuer without showing the value.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }
