package pii_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/companionhq/companion/internal/safety/pii"
	_ "github.com/companionhq/companion/internal/testkit"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		counts   pii.Counts
	}{
		// E-mail addresses.
		{"write to jane.doe@example.com today", "write to [email] today", pii.Counts{Email: 1}},
		{"J.Doe+tag@mail.example.co.uk.", "[email].", pii.Counts{Email: 1}},
		{"a_b-c%d@sub-domain.example.org, x@y.io", "[email], [email]", pii.Counts{Email: 2}},
		{"<bob@example.com>", "<[email]>", pii.Counts{Email: 1}},
		{"2025550143@txt.example.net", "[email]", pii.Counts{Email: 1}},
		{"@handle on social", "@handle on social", pii.Counts{}},
		{"user@localhost", "user@localhost", pii.Counts{}},
		{"a@b.c", "a@b.c", pii.Counts{}},
		{"me@ example.com", "me@ example.com", pii.Counts{}},
		{"x@-bad.com", "x@-bad.com", pii.Counts{}},
		{"x@a..com", "x@a..com", pii.Counts{}},
		{"x@example.c0m", "x@example.c0m", pii.Counts{}},
		{"git@github.com:org/repo.git", "[email]:org/repo.git", pii.Counts{Email: 1}},

		// Phone numbers.
		{"call +44 20 7946 0958 now", "call [phone] now", pii.Counts{Phone: 1}},
		{"call +1-202-555-0143.", "call [phone].", pii.Counts{Phone: 1}},
		{"(202) 555-0143", "[phone]", pii.Counts{Phone: 1}},
		{"at (202) 555-0143 or 202.555.0143 or 202-555-0143", "at [phone] or [phone] or [phone]", pii.Counts{Phone: 3}},
		{"202 555 0143", "[phone]", pii.Counts{Phone: 1}},
		{"1-800-555-0199", "[phone]", pii.Counts{Phone: 1}},
		{"+1 (202) 555-0143", "[phone]", pii.Counts{Phone: 1}},
		{"+44 (0)20 7946 0958", "[phone]", pii.Counts{Phone: 1}},
		{"020 7946 0958", "[phone]", pii.Counts{Phone: 1}},
		{"07700 900123", "[phone]", pii.Counts{Phone: 1}},
		{"06 12 34 56 78", "[phone]", pii.Counts{Phone: 1}},
		{"01.23.45.67.89", "[phone]", pii.Counts{Phone: 1}},
		{"030 12345678", "[phone]", pii.Counts{Phone: 1}},
		{"612 345 678", "[phone]", pii.Counts{Phone: 1}},
		{"+33612345678", "[phone]", pii.Counts{Phone: 1}},
		{"07700900123", "[phone]", pii.Counts{Phone: 1}},
		{"my number is 2025550143!", "my number is [phone]!", pii.Counts{Phone: 1}},
		{"tel:+12025550143", "tel:[phone]", pii.Counts{Phone: 1}},
		{"(202-555-0143)", "([phone])", pii.Counts{Phone: 1}},
		{"202 - 555 - 0143", "[phone]", pii.Counts{Phone: 1}},
		{"Phone: 202-555-0143, fax: 202-555-0144", "Phone: [phone], fax: [phone]", pii.Counts{Phone: 2}},
		{"ring 98765 43210", "ring [phone]", pii.Counts{Phone: 1}},

		{"202-555-0143 202-555-0144", "[phone] [phone]", pii.Counts{Phone: 2}},
		{"12 020 7946 0958 +44 20 7946 0958", "[phone] [phone]", pii.Counts{Phone: 2}},
		{"4111 1111 1111 1111 202-555-0143", "[card] [phone]", pii.Counts{Card: 1, Phone: 1}},

		// Card numbers.
		{"card 4111 1111 1111 1111 exp", "card [card] exp", pii.Counts{Card: 1}},
		{"4111-1111-1111-1111", "[card]", pii.Counts{Card: 1}},
		{"4111111111111111", "[card]", pii.Counts{Card: 1}},
		{"amex 3782 822463 10005", "amex [card]", pii.Counts{Card: 1}},
		{"378282246310005", "[card]", pii.Counts{Card: 1}},
		{"5555 5555 5555 4444.", "[card].", pii.Counts{Card: 1}},
		{"6011 0009 9013 9424", "[card]", pii.Counts{Card: 1}},
		{"4222222222222", "[card]", pii.Counts{Card: 1}},           // 13 digits
		{"6304 0000 0000 0000 018", "[card]", pii.Counts{Card: 1}}, // 19 digits

		// All three.
		{"jane@example.com, +1 202 555 0143, 4111 1111 1111 1111", "[email], [phone], [card]", pii.Counts{1, 1, 1}},

		// Not personal data.
		{"4111 1111 1111 1112", "4111 1111 1111 1112", pii.Counts{}}, // Luhn-invalid: not a card, too long for a phone
		{"4111 1111 1111 1112 333", "4111 1111 1111 1112 333", pii.Counts{}},
		{"1234567812345678", "1234567812345678", pii.Counts{}},
		{"on 2026-11-26 at 10:30", "on 2026-11-26 at 10:30", pii.Counts{}},
		{"26/11/2026", "26/11/2026", pii.Counts{}},
		{"11/26/2026 14:30:00", "11/26/2026 14:30:00", pii.Counts{}},
		{"2026-11-26T10:30:00Z", "2026-11-26T10:30:00Z", pii.Counts{}},
		{"26.11.2026", "26.11.2026", pii.Counts{}},
		{"2026-11-26 12:00", "2026-11-26 12:00", pii.Counts{}},
		{"$1,299.99", "$1,299.99", pii.Counts{}},
		{"$1,234,567,890.00", "$1,234,567,890.00", pii.Counts{}},
		{"€1.299.999.999", "€1.299.999.999", pii.Counts{}},
		{"1 000 000 000 people", "1 000 000 000 people", pii.Counts{}},
		{"1.000.000.000", "1.000.000.000", pii.Counts{}},
		{"v1.2.3", "v1.2.3", pii.Counts{}},
		{"version 10.15.7", "version 10.15.7", pii.Counts{}},
		{"order 12345", "order 12345", pii.Counts{}},
		{"order #1234567890", "order #1234567890", pii.Counts{}},
		{"in 2026", "in 2026", pii.Counts{}},
		{"1999 2000 2001", "1999 2000 2001", pii.Counts{}},
		{"192.168.100.200", "192.168.100.200", pii.Counts{}},
		{"pi is 3.14159265358979", "pi is 3.14159265358979", pii.Counts{}},
		{"99.999999999%", "99.999999999%", pii.Counts{}},
		{"1 2 3 4 5 6 7 8 9 10", "1 2 3 4 5 6 7 8 9 10", pii.Counts{}},
		{"timestamp 1735689600", "timestamp 1735689600", pii.Counts{}},
		{"id abc2025550143", "id abc2025550143", pii.Counts{}},
		{"/users/2025550143/posts", "/users/2025550143/posts", pii.Counts{}},
		{"2025550143px", "2025550143px", pii.Counts{}},
		{"123456789", "123456789", pii.Counts{}},
		{"uuid 123e4567-e89b-12d3-a456-426614174000", "uuid 123e4567-e89b-12d3-a456-426614174000", pii.Counts{}},
		{"", "", pii.Counts{}},
		{"plain words, nothing else.", "plain words, nothing else.", pii.Counts{}},
		{"naïve café 2026 — ok", "naïve café 2026 — ok", pii.Counts{}},
	} {
		got, counts := pii.Redact(tc.in)
		if got != tc.want || counts != tc.counts {
			t.Errorf("Redact(%q) = %q, %+v; want %q, %+v", tc.in, got, counts, tc.want, tc.counts)
		}
	}
}

func TestCountsTotal(t *testing.T) {
	if n := (pii.Counts{Email: 1, Phone: 2, Card: 3}).Total(); n != 6 {
		t.Errorf("Total = %d", n)
	}
}

// TestUnchangedIsNotCopied: a text without personal data comes back as it
// is, without an allocation: the common case costs one pass.
func TestUnchangedIsNotCopied(t *testing.T) {
	text := strings.Repeat("Nothing to hide here, see you at 10:30 on 2026-11-26. ", 4)
	if n := testing.AllocsPerRun(100, func() { pii.Redact(text) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

// FuzzRedact: Redact never panics, keeps valid UTF-8 valid, never grows a
// text by more than its tokens, and is idempotent.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{
		"jane.doe@example.com", "+44 20 7946 0958", "(202) 555-0143", "4111 1111 1111 1111", "2026-11-26", "$1,299.99",
		"a@b.co 202.555.0143 (0)20", "+1 (202) 555-0143x", "((((1", "1 - 2 - 3", "x@y.com@z.org", "(12)(34)", "+", "(", "0 (",
		"202-555-0143 202-555-0144", "4111-1111 1111-1111",
		"(94 91 - 555202+555120143", "202014304111 (0)(0)411141115",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once, c := pii.Redact(s)
		twice, c2 := pii.Redact(once)
		if twice != once || c2.Total() != 0 {
			t.Errorf("Redact(%q) = %q, then %q (%+v)", s, once, twice, c2)
		}
		if utf8.ValidString(s) && !utf8.ValidString(once) {
			t.Errorf("Redact(%q) = %q is not valid UTF-8", s, once)
		}
		if len(once) > len(s)+7*c.Total() {
			t.Errorf("Redact(%q) = %q grew", s, once)
		}
	})
}

// TestLongRuns: runs of many digit groups take linear time.
func TestLongRuns(t *testing.T) {
	for _, unit := range []string{"1 ", "12 ", "202-555-0143 ", "4111 ", "(0)", "+1 (2"} {
		text := strings.Repeat(unit, 200_000/len(unit))
		start := time.Now()
		once, _ := pii.Redact(text)
		if twice, _ := pii.Redact(once); twice != once {
			t.Errorf("%q repeated: not idempotent", unit)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%q repeated: %s", unit, d)
		}
	}
}

// message is a typical stored message of about 200 bytes.
const message = "Hi! I moved to the new flat on 2026-11-26 and the rent is $1,299.99 a month. " +
	"You can reach me at jane.doe@example.com or on +44 20 7946 0958 after 18:00, thanks a lot."

func BenchmarkRedact(b *testing.B) {
	for _, bc := range []struct{ name, text string }{
		{"with-pii", message},
		{"without-pii", strings.NewReplacer("jane.doe@example.com", "the usual address", "+44 20 7946 0958", "the phone").Replace(message)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.text)))
			b.ReportAllocs()
			for b.Loop() {
				pii.Redact(bc.text)
			}
		})
	}
}
