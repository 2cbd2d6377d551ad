package run

import (
	"testing"

	"github.com/companionhq/companion/internal/agent"
)

// BenchmarkRecord is one event's trip through the run's log: encoded by
// the run, decoded by each reader.
func BenchmarkRecord(b *testing.B) {
	rec := &Record{Text: &agent.TextDelta{Text: " word"}}
	// A run encodes its records with one encoder, a reader decodes them
	// with one decoder.
	enc, dec := new(encoder), new(Decoder)
	b.ReportAllocs()
	for b.Loop() {
		data, err := enc.encode(rec)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := dec.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}
