package fake

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/companionhq/companion/internal/model"
)

// What the fake does with what the service remembers for it: a user
// message that starts with "Remember" makes it call updateWorkingMemory
// with what follows (the whole block with a line added, or the field
// "notes" in schema mode), then thank the user; recalled messages in its
// instructions make it refer to the first one ("You told me before: …");
// a request for a title gets the first words of the conversation.

// memoryTool is the tool that changes working memory.
const memoryTool = "updateWorkingMemory"

var rememberRE = regexp.MustCompile(`(?is)^\s*(?:please\s*,?\s*)?remember\b[\s,:]*(?:that\s+)?(.*?)[\s.!]*$`)

// remembered is what a user message asks the fake to remember, "" when it
// asks nothing of the kind.
func remembered(msg string) string {
	m := rememberRE.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	return strings.Join(strings.Fields(m[1]), " ")
}

// memoryCall asks updateWorkingMemory to keep fact.
func memoryCall(req model.Request, fact string) ([]model.Part, int) {
	var args []byte
	if schemaMode(req.Tools) {
		args, _ = json.Marshal(map[string]any{"memory": map[string]any{"notes": []string{fact}}})
	} else {
		block := strings.TrimRight(workingMemory(req.System), "\n")
		if block != "" {
			block += "\n"
		}
		args, _ = json.Marshal(map[string]string{"memory": block + "- " + fact})
	}
	id := "call_" + hashHex(req, "memory")
	parts := []model.Part{{Kind: model.PartToolCallStart, ToolCallID: id, ToolName: memoryTool}}
	for _, d := range chunks(string(args), 24) {
		parts = append(parts, model.Part{Kind: model.PartToolCallDelta, ToolCallID: id, Text: d})
	}
	parts = append(parts, model.Part{Kind: model.PartToolCallEnd, ToolCallID: id})
	return parts, CountTokens(memoryTool) + CountTokens(string(args))
}

// schemaMode reports whether working memory's tool takes an object.
func schemaMode(tools []model.ToolSpec) bool {
	for _, t := range tools {
		if t.Name == memoryTool {
			var p struct {
				Properties struct {
					Memory struct {
						Type string `json:"type"`
					} `json:"memory"`
				} `json:"properties"`
			}
			_ = json.Unmarshal(t.Parameters, &p)
			return p.Properties.Memory.Type == "object"
		}
	}
	return false
}

// workingMemory is the block between <working_memory> and
// </working_memory> in the instructions.
func workingMemory(system string) string {
	_, after, ok := strings.Cut(system, "<working_memory>\n")
	if !ok {
		return ""
	}
	block, _, _ := strings.Cut(after, "</working_memory>")
	return block
}

// lastToolCall is the name of the tool whose result ends msgs.
func lastToolCall(msgs []model.Message) string {
	n := len(msgs)
	if n == 0 || msgs[n-1].Role != model.RoleTool {
		return ""
	}
	return msgs[n-1].ToolName
}

// saidMark opens what the user said in a block of recalled messages: a
// quoted Go string follows.
const saidMark = `the user said: "`

// recalledFrom is the first thing the user said that the instructions
// recall, "" when they recall nothing. It reads the block by hand: a
// regular expression over it was half the fake's answer to a turn with
// memory.
func recalledFrom(system string) string {
	_, block, ok := strings.Cut(system, "From earlier conversations with the user")
	if !ok {
		return ""
	}
	for {
		i := strings.Index(block, saidMark)
		if i < 0 {
			return ""
		}
		block = block[i+len(saidMark)-1:]
		if n := quotedLen(block); n > 0 {
			s, err := strconv.Unquote(block[:n])
			if err != nil {
				return ""
			}
			return s
		}
		block = block[1:]
	}
}

// quotedLen is the length of the double-quoted string that s starts with,
// its quotes included (a backslash escapes the character after it, except
// a newline), or 0 when s does not start with one.
func quotedLen(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '"':
			return i + 1
		case '\\':
			if i+1 == len(s) || s[i+1] == '\n' {
				return 0
			}
			i++
		}
	}
	return 0
}

// title makes a conversation's title from its first user message: its
// first words, the first capitalised.
func title(msgs []model.Message) string {
	first := ""
	for _, m := range msgs {
		if m.Role == model.RoleUser {
			first = m.Content
			break
		}
	}
	words := strings.FieldsFunc(first, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' })
	if len(words) > 6 {
		words = words[:6]
	}
	t := strings.Join(words, " ")
	if t == "" {
		return "A new conversation"
	}
	r, size := utf8.DecodeRuneInString(t)
	return string(unicode.ToUpper(r)) + t[size:]
}
