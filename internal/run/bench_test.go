package run

import (
	"encoding/json"
	"testing"

	"github.com/companionhq/companion/internal/agent"
)

// BenchmarkRecord is one event's trip through the run's log: encoded by
// the run, decoded by each reader.
func BenchmarkRecord(b *testing.B) {
	rec := Record{Text: &agent.TextDelta{Text: " word"}}
	b.ReportAllocs()
	for b.Loop() {
		data, err := json.Marshal(rec)
		if err != nil {
			b.Fatal(err)
		}
		var back Record
		if err := json.Unmarshal(data, &back); err != nil {
			b.Fatal(err)
		}
	}
}
