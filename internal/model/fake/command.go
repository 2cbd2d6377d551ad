package fake

import (
	"encoding/json"
	"strings"

	"github.com/companionhq/companion/internal/model"
)

// toolCommand is the prefix of a user message that calls a tool by hand:
// "/tool NAME {json arguments}", so that tests and demos can drive any
// offered tool (an MCP server's, say) through the fake.
const toolCommand = "/tool "

// commandedTool reads a "/tool NAME ARGS" message: the tool's name and its
// arguments as written ({} when there are none), when NAME is offered.
// Arguments that are not JSON are passed on for the agent to refuse, as it
// would a real model's.
func commandedTool(content string, tools []model.ToolSpec) (string, string, bool) {
	rest, ok := strings.CutPrefix(content, toolCommand)
	if !ok {
		return "", "", false
	}
	name, args, _ := strings.Cut(strings.TrimSpace(rest), " ")
	if !hasTool(tools, name) {
		return "", "", false
	}
	if args = strings.TrimSpace(args); args == "" {
		args = "{}"
	}
	return name, args, true
}

// commandCall asks for the named tool once, arguments in deltas of a few
// bytes each.
func commandCall(req model.Request, name, args string) ([]model.Part, int) {
	id := "call_" + hashHex(req, "command")
	parts := []model.Part{{Kind: model.PartToolCallStart, ToolCallID: id, ToolName: name}}
	for _, d := range chunks(args, 12) {
		parts = append(parts, model.Part{Kind: model.PartToolCallDelta, ToolCallID: id, Text: d})
	}
	parts = append(parts, model.Part{Kind: model.PartToolCallEnd, ToolCallID: id})
	return parts, CountTokens(name) + CountTokens(args)
}

// commandAnswer is the text of the trailing tool results: a string result
// as it is, any other as its JSON, a failure as its message.
func commandAnswer(msgs []model.Message) string {
	start := len(msgs)
	for start > 0 && msgs[start-1].Role == model.RoleTool {
		start--
	}
	var lines []string
	for _, m := range msgs[start:] {
		var s string
		var failed struct {
			Error string `json:"error"`
		}
		switch {
		case m.IsError && json.Unmarshal([]byte(m.Content), &failed) == nil && failed.Error != "":
			lines = append(lines, failed.Error)
		case json.Unmarshal([]byte(m.Content), &s) == nil:
			lines = append(lines, s)
		default:
			lines = append(lines, m.Content)
		}
	}
	return strings.Join(lines, "\n")
}
