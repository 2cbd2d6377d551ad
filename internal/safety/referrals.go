// Package safety holds the processors that guard a companion's users
// (docs/safety.md): the crisis protocol, moderation through the operator's
// provider, redaction of personal data, and a filter of sexual content in
// the replies a minor reads; and the texts they show.
package safety

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Texts are what the crisis protocol shows, in one locale.
type Texts struct {
	// Reply opens the reply, before the referral: a few words of care.
	Reply string `json:"reply"`
	// Referral says where to find help now (a crisis line): the
	// crisis-referral notice, and the end of the reply.
	Referral string `json:"referral"`
}

// Referrals are the crisis protocol's texts by locale.
type Referrals struct {
	// Default is the locale of a user whose locale has no texts.
	Default string           `json:"default"`
	Locales map[string]Texts `json:"locales"`
}

//go:embed referrals.json
var defaultReferrals []byte

// DefaultReferrals are the texts the service ships: the US 988 Suicide &
// Crisis Lifeline, lines of a few other countries, and for everyone else a
// directory of the world's crisis lines.
func DefaultReferrals() Referrals {
	r, err := parseReferrals(defaultReferrals)
	if err != nil {
		panic(fmt.Sprintf("safety: the embedded referrals: %v", err)) // a build error, caught by the tests
	}
	return r
}

// LoadReferrals reads an operator's texts (JSON, as referrals.json).
func LoadReferrals(path string) (Referrals, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Referrals{}, fmt.Errorf("reading the crisis referrals: %w", err)
	}
	r, err := parseReferrals(b)
	if err != nil {
		return Referrals{}, fmt.Errorf("the crisis referrals in %s: %w", path, err)
	}
	return r, nil
}

func parseReferrals(b []byte) (Referrals, error) {
	var r Referrals
	if err := json.Unmarshal(b, &r); err != nil {
		return Referrals{}, err
	}
	norm := make(map[string]Texts, len(r.Locales))
	for loc, t := range r.Locales {
		if strings.TrimSpace(t.Referral) == "" {
			return Referrals{}, fmt.Errorf("locale %q has no referral: every locale must say where to find help", loc)
		}
		norm[strings.ToLower(loc)] = t
	}
	r.Locales = norm
	r.Default = strings.ToLower(r.Default)
	if _, ok := r.Locales[r.Default]; !ok {
		return Referrals{}, errors.New(`"default" must name one of the locales`)
	}
	return r, nil
}

// For returns the texts of locale and the locale they are of: the locale
// itself, else its language, else Default.
func (r Referrals) For(locale string) (string, Texts) {
	loc := strings.ToLower(locale)
	for loc != "" {
		if t, ok := r.Locales[loc]; ok {
			return loc, t
		}
		i := strings.LastIndexByte(loc, '-')
		if i < 0 {
			break
		}
		loc = loc[:i]
	}
	return r.Default, r.Locales[r.Default]
}
