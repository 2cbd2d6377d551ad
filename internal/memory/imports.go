package memory

import "encoding/json"

// What the stores share of Import: how they read the threads of an import.

// MergeImport is threads with the entries of one thread made one: the
// first entry's Thread, and the messages of every entry in order.
func MergeImport(threads []ImportThread) []ImportThread {
	out := make([]ImportThread, 0, len(threads))
	at := make(map[string]int, len(threads))
	for _, it := range threads {
		if i, ok := at[it.Thread.ID]; ok {
			out[i].Messages = append(out[i].Messages, it.Messages...)
			continue
		}
		at[it.Thread.ID] = len(out)
		it.Messages = append([]Message(nil), it.Messages...)
		out = append(out, it)
	}
	return out
}

// ImportedThread is t as an import creates it: metadata {} when it has
// none, UpdatedAt its CreatedAt when zero, times as stored, no bytes yet.
func ImportedThread(t Thread) Thread {
	if t.Metadata == nil {
		t.Metadata = json.RawMessage(`{}`)
	}
	if t.UpdatedAt.IsZero() {
		t.UpdatedAt = t.CreatedAt
	}
	t.CreatedAt, t.UpdatedAt = AsStored(t.CreatedAt), AsStored(t.UpdatedAt)
	t.Bytes = 0
	return t
}

// FreshImported is what an import adds of msgs to a thread that holds the
// ids known: the first message of each id it does not hold, in order, not
// pending, with its time as stored.
func FreshImported(msgs []Message, known map[string]bool) []Message {
	var out []Message
	seen := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		if known[m.ID] || seen[m.ID] {
			continue
		}
		seen[m.ID] = true
		m.Pending = false
		m.CreatedAt = AsStored(m.CreatedAt)
		out = append(out, m)
	}
	return out
}
