package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/client"
)

// workingMemoryTool is the tool through which the model changes what the
// companion knows of the person (its working memory).
const workingMemoryTool = "updateWorkingMemory"

// screen writes a streamed reply as `companion chat` and `ask` show it: its
// text on out as it comes, and notes (the notices the user must be told,
// tool calls, their results, tool errors, a reply a safety check stopped)
// on lines of their own on notes, styled when color.
type screen struct {
	out, notes io.Writer
	color      bool
	// cutShort notes a reply that reached the output limit.
	cutShort bool
	// midLine says out's last line is not ended.
	midLine bool
}

// show writes one event of the reply. An error the run ends with is not
// written: it is returned, for the caller to report.
func (s *screen) show(ev client.Event) *api.StreamError {
	switch p := ev.Payload.(type) {
	case api.StartPayload:
		// Told before the reply: it starts after them.
		for _, n := range p.Notices {
			s.notice(n)
		}
	case api.ToolCall:
		if p.ToolName == workingMemoryTool {
			// Its arguments are the whole block: /memory shows it.
			s.note(styleDim, "⚙ "+p.ToolName+" (noting what it learned of you)")
			break
		}
		s.note(styleDim, "⚙ "+p.ToolName+" "+compactJSON(p.Args))
	case api.ToolResult:
		if p.IsError { // a failed call's error event said it
			break
		}
		var kept struct{ Version int64 }
		if p.ToolName == workingMemoryTool && json.Unmarshal(p.Result, &kept) == nil && kept.Version > 0 {
			s.note(styleDim, fmt.Sprintf("→ noted (version %d)", kept.Version))
			break
		}
		s.note(styleDim, "→ "+summarize(p.Result))
	case api.RunFinishPayload:
		if s.cutShort && p.FinishReason == api.FinishLength {
			s.note(styleDim, "(cut short: the reply reached the output limit)")
		}
		if reason, tripped := ev.Tripwire(); tripped {
			s.note(styleYellow, tripwireNote(reason))
		}
	}
	switch {
	case ev.Type == api.EventText:
		fmt.Fprint(s.out, ev.Text)
		s.midLine = !strings.HasSuffix(ev.Text, "\n")
	case ev.Type == api.EventError && ev.Error != nil:
		if ev.Error.Code != api.CodeToolError {
			return ev.Error
		}
		s.note(styleYellow, "✗ "+ev.Error.Message)
	}
	return nil
}

// noticeLabels mark each kind of notice, and noticeStyles style it: the
// crisis referral stands out, the others are quiet.
var (
	noticeLabels = map[string]string{
		api.NoticeAIDisclosure:   "[AI]",
		api.NoticeBreakReminder:  "[break]",
		api.NoticeCrisisReferral: "[help]",
	}
	noticeStyles = map[string]string{
		api.NoticeAIDisclosure:   styleDim,
		api.NoticeBreakReminder:  styleYellow,
		api.NoticeCrisisReferral: styleBold,
	}
)

// notice writes a notice on a line of its own, marked by its kind: "[AI]
// You are talking to an AI companion, not a person.". A kind this client
// does not know is marked by its name. A text of several lines keeps them,
// indented under the first.
func (s *screen) notice(n api.Notice) {
	label, ok := noticeLabels[n.Kind]
	if !ok {
		label = "[" + n.Kind + "]"
	}
	style, ok := noticeStyles[n.Kind]
	if !ok {
		style = styleDim
	}
	text := strings.TrimSpace(n.Text)
	text = strings.ReplaceAll(text, "\n", "\n"+strings.Repeat(" ", utf8.RuneCountInString(label)+1))
	s.note(style, label+" "+text)
}

// tripwireNote is the note after a reply a safety check stopped.
func tripwireNote(reason string) string {
	if reason == "" {
		return "[safety] this reply was stopped by a safety check"
	}
	return "[safety] this reply was stopped: " + reason
}

// note writes a line of its own on notes, in style on a terminal.
func (s *screen) note(style, text string) {
	if s.notes == s.out {
		s.endLine()
	}
	if s.color {
		text = style + text + styleReset
	}
	fmt.Fprintln(s.notes, text)
}

// printf writes text on out, in style on a terminal.
func (s *screen) printf(style, text string) {
	if s.color {
		text = style + text + styleReset
	}
	fmt.Fprint(s.out, text)
}

// endLine ends a line the reply left open on out.
func (s *screen) endLine() {
	if s.midLine {
		fmt.Fprintln(s.out)
		s.midLine = false
	}
}
