package turn

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/model"
)

// Recall gives the model, before it answers, the messages of the user's
// other conversations that are relevant to the new message: found in the
// store's full-text index (memory.Knowledge.Search), each with the
// messages around it and its date, within a budget.

// Defaults of RecallConfig, as Mastra's semantic recall has them.
const (
	DefaultRecallTopK         = 4
	DefaultRecallMessageRange = 1
	// DefaultRecallBytes bounds what recall adds to the model's context:
	// about 1,000 tokens.
	DefaultRecallBytes = 4000
)

// RecallConfig says what recall looks for.
type RecallConfig struct {
	// Off turns recall off.
	Off bool
	// TopK is how many messages are recalled, MessageRange how many
	// around each come with it.
	TopK, MessageRange int
	// Scope is memory.ScopeResource (the default: the resource's other
	// threads) or memory.ScopeThread (the thread's own messages older
	// than its history window).
	Scope string
	// MaxBytes bounds the text recall adds; 0 is DefaultRecallBytes.
	MaxBytes int
	// EmbedWait is how long recall waits for the query's vector, with an
	// embedding model (vectors.go): the call starts as the turn begins;
	// when it has not answered by the time recall runs and this wait, recall
	// ranks by words alone. 0 does not wait.
	EmbedWait time.Duration
}

func (c RecallConfig) withDefaults() RecallConfig {
	if c.TopK <= 0 {
		c.TopK = DefaultRecallTopK
	}
	if c.MessageRange < 0 {
		c.MessageRange = 0
	}
	if c.Scope == "" {
		c.Scope = memory.ScopeResource
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultRecallBytes
	}
	return c
}

func (c RecallConfig) check() error {
	if c.Scope != memory.ScopeResource && c.Scope != memory.ScopeThread {
		return fmt.Errorf("recall scope %q is not resource or thread", c.Scope)
	}
	return nil
}

// RecallHeading opens the block of recalled messages in the model's
// context.
const RecallHeading = "From earlier conversations with the user (recalled from memory; each with when it was said):"

// recall is a turn's step: it searches the resource's other threads (or
// the thread's older messages) for the new user message's words and shows
// what it finds to the model.
func (t *Turns) recall(ctx context.Context, s *State) error {
	cfg := t.cfg.Recall
	if cfg.Off || s.In.ResourceID == "" || s.tripped() {
		return nil
	}
	text := lastUserText(s.In.Messages)
	if len(memory.SearchTerms(text)) == 0 {
		return nil
	}
	q := memory.SearchQuery{ResourceID: s.In.ResourceID, Text: text, Limit: cfg.TopK}
	shown := map[string]bool{}
	if cfg.Scope == memory.ScopeThread {
		q.ThreadID = s.In.ThreadID
		// The history the model sees already: ask for more, and leave it out.
		q.Limit += len(s.tail)
		for _, m := range s.tail {
			shown[m.ID] = true
		}
	} else {
		q.ExcludeThreadID = s.In.ThreadID
	}
	started := time.Now()
	ctx, span := t.startSpan(ctx, "recall")
	vec := t.awaitQueryVector(ctx, s)
	typ := SearchText
	if vec != nil {
		typ = SearchHybrid
	}
	results, err := t.search(ctx, q, cfg.MessageRange, vec)
	span.End()
	if err != nil {
		return storeErr(err)
	}
	var kept []memory.SearchResult
	for _, r := range results {
		if !shown[r.Message.ID] && len(kept) < cfg.TopK {
			kept = append(kept, r)
		}
	}
	t.cfg.Observer.Recalled(typ, time.Since(started), len(kept))
	if block := recallBlock(kept, s.Now, cfg.MaxBytes); block != "" {
		s.In.Context = append(s.In.Context, block)
	}
	return nil
}

// lastUserText is the text of the newest user message of msgs.
func lastUserText(msgs []agent.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleUser {
			return msgs[i].Content
		}
	}
	return ""
}

// recallBlock writes recalled results for the model: each with its date,
// its thread's title, and the messages around it, while they fit in
// maxBytes; "" when none does. A message shown already, as a result or as
// one's context, is not shown again.
func recallBlock(results []memory.SearchResult, now time.Time, maxBytes int) string {
	// One buffer: an entry is written after what fits, and cut off again
	// when it does not fit.
	b := make([]byte, 0, min(maxBytes, 4096))
	b = append(b, RecallHeading...)
	type id struct{ thread, message string }
	shown := map[id]bool{}
	key := func(thread string, m memory.Message) id { return id{thread, m.ID} }
	line := func(b []byte, lead string, role string, text string) []byte {
		b = append(b, lead...)
		b = append(b, saidBy(role)...)
		b = append(b, ": "...)
		return appendQuote(b, oneLine(text))
	}
	any := false
	for _, r := range results {
		if shown[key(r.ThreadID, r.Message)] {
			continue
		}
		start := len(b)
		b = append(b, "\n- On "...)
		b = r.Message.CreatedAt.UTC().AppendFormat(b, "2 January 2006")
		b = append(b, " ("...)
		b = append(b, ago(now, r.Message.CreatedAt)...)
		b = append(b, ')')
		if r.ThreadTitle != "" {
			b = append(b, ", in the conversation "...)
			b = appendQuote(b, r.ThreadTitle)
		}
		b = line(b, ", ", r.Message.Role, r.Message.Text)
		var around []memory.Message
		for _, m := range r.Before {
			if !shown[key(r.ThreadID, m)] {
				b = line(b, "\n  Just before, ", m.Role, m.Text)
				around = append(around, m)
			}
		}
		for _, m := range r.After {
			if !shown[key(r.ThreadID, m)] {
				b = line(b, "\n  Just after, ", m.Role, m.Text)
				around = append(around, m)
			}
		}
		if len(b) > maxBytes {
			b = b[:start]
			break
		}
		any = true
		shown[key(r.ThreadID, r.Message)] = true
		for _, m := range around {
			shown[key(r.ThreadID, m)] = true
		}
	}
	if !any {
		return ""
	}
	return string(b)
}

func saidBy(role string) string {
	if role == model.RoleAssistant {
		return "you said"
	}
	return "the user said"
}

// oneLine is text on one line, shortened past a few hundred bytes: its
// runs of white space made one space.
func oneLine(text string) string {
	const most = 400
	if len(text) <= most && !needsFolding(text) {
		return text
	}
	text = strings.Join(strings.Fields(text), " ")
	if len(text) > most {
		cut := most
		for cut > 0 && text[cut]&0xC0 == 0x80 {
			cut--
		}
		text = text[:cut] + "..."
	}
	return text
}

// appendQuote is strconv.AppendQuote: a recall block quotes some
// kilobytes a turn, and AppendQuote looks each rune up in Unicode's
// tables, where most text is printable ASCII that it copies as it is.
func appendQuote(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return strconv.AppendQuote(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// needsFolding reports whether text has white space other than single
// spaces between words (what strings.Fields and a join would change).
func needsFolding(text string) bool {
	prev := byte(' ')
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c >= 0x80:
			return true // possibly Unicode white space: the slow way
		case c == ' ':
			if prev == ' ' {
				return true // leading, or doubled
			}
		case c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r':
			return true
		}
		prev = c
	}
	return prev == ' ' // trailing, or empty
}

// ago says how long before now t was, as a person would: today,
// yesterday, 3 days ago, 2 weeks ago, 5 months ago, a year ago.
func ago(now, t time.Time) string {
	days := int(now.Sub(t).Hours() / 24)
	switch {
	case days < 1:
		return "today"
	case days < 2:
		return "yesterday"
	case days < 14:
		return fmt.Sprintf("%d days ago", days)
	case days < 60:
		return fmt.Sprintf("%d weeks ago", days/7)
	case days < 365:
		return fmt.Sprintf("%d months ago", days/30)
	case days < 730:
		return "a year ago"
	}
	return fmt.Sprintf("%d years ago", days/365)
}
