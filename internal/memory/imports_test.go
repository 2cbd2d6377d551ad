package memory

import (
	"strings"
	"testing"
	"time"
)

func TestMergeImport(t *testing.T) {
	m := func(id string) Message { return Message{ID: id} }
	in := []ImportThread{
		{Thread: Thread{ID: "a", Title: "first"}, Messages: []Message{m("1"), m("2")}},
		{Thread: Thread{ID: "b"}, Messages: []Message{m("x")}},
		{Thread: Thread{ID: "a", Title: "second"}, Messages: []Message{m("3")}},
	}
	out := MergeImport(in)
	if len(out) != 2 || out[0].Thread.Title != "first" || out[1].Thread.ID != "b" {
		t.Fatalf("merged %+v", out)
	}
	var got []string
	for _, msg := range out[0].Messages {
		got = append(got, msg.ID)
	}
	if strings.Join(got, " ") != "1 2 3" || len(in[0].Messages) != 2 {
		t.Fatalf("thread a has %v (its first entry %d messages)", got, len(in[0].Messages))
	}
}

func TestFreshImported(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", 3600))
	msgs := []Message{{ID: "a", Pending: true, CreatedAt: at}, {ID: "b"}, {ID: "a", Text: "again"}, {ID: "c"}}
	fresh := FreshImported(msgs, map[string]bool{"b": true})
	if len(fresh) != 2 || fresh[0].ID != "a" || fresh[1].ID != "c" || fresh[0].Pending || !fresh[0].CreatedAt.Equal(AsStored(at)) || fresh[0].CreatedAt.Location() != time.UTC {
		t.Fatalf("fresh %+v", fresh)
	}
}
