package turn

import (
	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/model"
)

// newMessages returns the indexes in msgs of the messages the thread does
// not hold yet, in order. System messages are never stored. The rule:
//
//  1. A message with an id is known when the thread has a message with that
//     id, wherever it is in the thread; known messages are dropped.
//  2. Of the rest, the longest run at the start that repeats the thread's
//     last messages (same role and the same text, for messages without an
//     id) is dropped too: it is the client resending the conversation.
//
// Whatever follows is new.
func newMessages(msgs []agent.Message, tail []memory.Message, known map[string]bool) []int {
	var cand []int
	var keys []string
	for i, msg := range msgs {
		if msg.Role == agent.RoleSystem || (msg.ID != "" && known[msg.ID]) {
			continue
		}
		cand = append(cand, i)
		if msg.ID != "" {
			// A message with an unknown id is new: it matches no stored
			// message by its text (a stored key never starts with \x01).
			keys = append(keys, "\x01"+msg.ID)
		} else {
			keys = append(keys, msg.Role+"\x00"+msg.Content)
		}
	}
	stored := make([]string, len(tail))
	for i, s := range tail {
		stored[i] = s.Role + "\x00" + s.Text
	}
	return cand[overlap(stored, keys):]
}

// overlap is the length of the longest suffix of stored that is a prefix of
// req (Knuth-Morris-Pratt: linear in both, however long they are).
func overlap(stored, req []string) int {
	if len(stored) == 0 || len(req) == 0 {
		return 0
	}
	fail := make([]int, len(req))
	for i, k := 1, 0; i < len(req); i++ {
		for k > 0 && req[i] != req[k] {
			k = fail[k-1]
		}
		if req[i] == req[k] {
			k++
		}
		fail[i] = k
	}
	q := 0
	for _, s := range stored {
		for q > 0 && (q == len(req) || s != req[q]) {
			q = fail[q-1]
		}
		if s == req[q] {
			q++
		}
	}
	return q
}

// answerable reports whether a run has a user message to answer: a new one,
// or one stored by an earlier run that failed.
func answerable(msgs []agent.Message, fresh []int, tail []memory.Message) bool {
	for _, i := range fresh {
		if msgs[i].Role == model.RoleUser {
			return true
		}
	}
	for i := len(tail) - 1; i >= 0 && tail[i].Pending; i-- {
		if tail[i].Role == model.RoleUser {
			return true
		}
	}
	return false
}

// window is what the model sees of the stored tail: its last n model
// messages, and of those no more than the newest whose contents (text and
// tool arguments) fit in maxBytes. A cut that would leave tool results
// without the assistant message that asked for them drops those results.
func window(tail []memory.Message, n, maxBytes int) ([]model.Message, error) {
	if n <= 0 {
		return nil, nil
	}
	var rev [][]model.Message
	count := 0
	for i := len(tail) - 1; i >= 0 && count < n; i-- {
		ms, err := tail[i].ModelMessages()
		if err != nil {
			return nil, err
		}
		rev = append(rev, ms)
		count += len(ms)
	}
	out := make([]model.Message, 0, count)
	for i := len(rev) - 1; i >= 0; i-- {
		out = append(out, rev[i]...)
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	size := 0
	for i := len(out) - 1; i >= 0; i-- {
		size += contentBytes(out[i])
		if size > maxBytes {
			out = out[i+1:]
			break
		}
	}
	for len(out) > 0 && out[0].Role == model.RoleTool {
		out = out[1:]
	}
	return out, nil
}

// contentBytes is what a model message's contents weigh in the history.
func contentBytes(m model.Message) int {
	n := len(m.Content)
	for _, c := range m.ToolCalls {
		n += len(c.Args)
	}
	return n
}
