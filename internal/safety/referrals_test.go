package safety_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/safety"
)

// TestReferralsFor: a locale's own texts, else its language's, else the
// default's.
func TestReferralsFor(t *testing.T) {
	r := safety.DefaultReferrals()
	for _, tt := range []struct{ locale, want, says string }{
		{"en-US", "en-us", "988"},
		{"EN-gb", "en-gb", "Samaritans"},
		{"en-NZ", "en", "findahelpline.com"},
		{"es-MX", "es", "988"},
		{"fr-FR", "en", "findahelpline.com"},
		{"", "en", "findahelpline.com"},
	} {
		loc, texts := r.For(tt.locale)
		if loc != tt.want || !strings.Contains(texts.Referral, tt.says) || texts.Reply == "" {
			t.Errorf("For(%q) = %q %+v, want %q saying %q", tt.locale, loc, texts, tt.want, tt.says)
		}
	}
}

// TestLoadReferrals: an operator's file replaces the texts; one that
// leaves a locale without a referral, or names no default it has, is
// refused with the reason.
func TestLoadReferrals(t *testing.T) {
	write := func(body string) string {
		p := filepath.Join(t.TempDir(), "referrals.json")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	r, err := safety.LoadReferrals(write(`{"default":"fr","locales":{"fr":{"reply":"Je suis là.","referral":"Appelez le 3114."}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if loc, texts := r.For("de-DE"); loc != "fr" || texts.Referral != "Appelez le 3114." {
		t.Fatalf("For = %q %+v", loc, texts)
	}
	for body, want := range map[string]string{
		`{"default":"fr","locales":{"fr":{"reply":"Je suis là."}}}`: `locale "fr" has no referral`,
		`{"default":"de","locales":{"fr":{"referral":"3114"}}}`:     `"default" must name one of the locales`,
		`{"default":`: "unexpected end of JSON input",
	} {
		if _, err := safety.LoadReferrals(write(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadReferrals(%s) = %v, want %q", body, err, want)
		}
	}
	if _, err := safety.LoadReferrals(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Error("a missing file was accepted")
	}
}

// TestMinorContent: whole explicit words stop a reply; everyday words,
// and explicit ones inside others, do not; a word cut by where the new
// text starts is read whole.
func TestMinorContent(t *testing.T) {
	var m safety.MinorContent
	for text, trips := range map[string]bool{
		"Let's talk about lingerie":                true,
		"She sent NUDES.":                          true,
		"Sex education class was fun today":        false,
		"The thrust of the essay is clear":         false,
		"My grandmother knits, she's a cumbersome": false,
	} {
		if got := m.Check(text, 0) != nil; got != trips {
			t.Errorf("Check(%q) tripped %v, want %v", text, got, trips)
		}
	}
	if m.Check("Let's talk about linge"+"rie now", len("Let's talk about linge")) == nil {
		t.Error("a word the new text cuts into was not read whole")
	}
	if m.Check("lingerie, then the weather", len("lingerie, then")) != nil {
		t.Error("words checked before were checked again")
	}
}
