package redact_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/redact"
)

// TestSecret: a secret prints and logs as [redacted], an empty one as "".
func TestSecret(t *testing.T) {
	const key = "sk-0123456789abcdef"
	s := redact.Secret(key)
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", slog.Any("key", s))
	for _, got := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v %s", s, struct{ K redact.Secret }{s}, s), logs.String()} {
		if strings.Contains(got, key) || !strings.Contains(got, "[redacted]") {
			t.Errorf("%q shows the secret or hides it wrongly", got)
		}
	}
	if got := redact.Secret("").String(); got != "" {
		t.Errorf("an empty secret prints %q", got)
	}
}
