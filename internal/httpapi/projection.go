package httpapi

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"time"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/memory"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/pricing"
	"github.com/companionhq/companion/internal/turn"
)

// This file projects the domain (a run's result, stored threads and
// messages) into the API's wire shapes. It is the only place that knows
// both.

func usageOf(u model.Usage) api.Usage {
	return api.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens,
		ReasoningTokens: u.ReasoningTokens, CachedInputTokens: u.CachedInputTokens}
}

func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// roundUSD rounds dollars to a millionth of a cent: float sums need not
// show their last digits.
func roundUSD(f float64) float64 { return math.Round(f*1e8) / 1e8 }

// costOf is c as the API shows it.
func costOf(c pricing.Cost) api.Cost {
	return api.Cost{Currency: "USD", Input: roundUSD(c.Input), CachedInput: roundUSD(c.CachedInput), Output: roundUSD(c.Output), Total: roundUSD(c.Total())}
}

// generateBody is the generate endpoint's body for a finished turn.
func generateBody(o *turn.Outcome) api.GenerateResponse {
	res := o.Result
	steps := make([]api.Step, len(res.Steps))
	var reply []model.Message
	calls, results := []api.ToolCall{}, []api.ToolResult{}
	for i, s := range res.Steps {
		reply = append(reply, s.Messages...)
		steps[i] = stepBody(res, s, reply)
		calls = append(calls, steps[i].ToolCalls...)
		results = append(results, steps[i].ToolResults...)
	}
	var last api.Step
	if len(steps) > 0 {
		last = steps[len(steps)-1]
	} else {
		last = stepBody(res, agent.Step{}, nil)
	}
	resp := last.Response
	resp.Messages = modelMessages(res.Reply)
	resp.UIMessages = make([]api.UIMessage, 0, len(o.Stored))
	for _, m := range o.Stored {
		resp.UIMessages = append(resp.UIMessages, uiMessage(o.Thread, m, modelMessagesOf(m)))
	}
	body := api.GenerateResponse{
		Text:             res.Text(),
		Usage:            usageOf(res.Usage),
		TotalUsage:       usageOf(res.Usage),
		Steps:            steps,
		FinishReason:     res.FinishReason,
		Warnings:         warnings(res.Warnings),
		ProviderMetadata: withCost(last.ProviderMetadata, res.Cost),
		TraceID:          res.TraceID,
		RunID:            res.RunID,
		Request:          last.Request,
		Reasoning:        []any{},
		ToolCalls:        calls,
		ToolResults:      results,
		Sources:          []any{},
		Files:            []any{},
		Response:         resp,
		Notices:          notices(res.Notices),
	}
	if res.Trip != nil {
		body.Tripwire, body.TripwireReason = true, res.Trip.Reason
	}
	return body
}

// notices are ns as the API shows them: [] for none.
func notices(ns []agent.Notice) []api.Notice {
	out := make([]api.Notice, len(ns))
	for i, n := range ns {
		out[i] = api.Notice(n)
	}
	return out
}

// stepBody is one step of the generate body. reply is what the run added
// up to and including the step: the reply's UI message after the step is
// drawn from it.
func stepBody(res *agent.Result, s agent.Step, reply []model.Message) api.Step {
	st := api.Step{
		StepType: string(s.Kind), Text: s.Text, ReasoningText: s.Reasoning,
		Content: []api.ContentPart{}, Sources: []any{}, Files: []any{}, Reasoning: []any{},
		ToolCalls: []api.ToolCall{}, StaticToolCalls: []api.ToolCall{}, DynamicToolCalls: []api.ToolCall{},
		ToolResults: []api.ToolResult{}, StaticToolResults: []api.ToolResult{}, DynamicToolResults: []api.ToolResult{},
		Warnings: warnings(s.Warnings), FinishReason: s.FinishReason, Usage: usageOf(s.Usage), TotalUsage: usageOf(s.Total),
		Request:          api.RequestInfo{Body: requestBody(s.ModelID, s.Request)},
		ProviderMetadata: s.ProviderMetadata,
		TraceID:          res.TraceID,
	}
	if s.FinishReason == agent.FinishTripped && res.Trip != nil && s.Index == len(res.Steps)-1 {
		st.Tripwire, st.TripwireReason = true, res.Trip.Reason
	}
	if st.ProviderMetadata == nil {
		st.ProviderMetadata = map[string]any{}
	}
	if s.Text != "" {
		st.Content = append(st.Content, api.ContentPart{Type: "text", Text: s.Text})
	}
	if s.Reasoning != "" {
		st.Reasoning = append(st.Reasoning, map[string]string{"type": "reasoning", "text": s.Reasoning})
	}
	for _, c := range s.Calls {
		tc := toolCall(c)
		st.ToolCalls = append(st.ToolCalls, tc)
		st.StaticToolCalls = append(st.StaticToolCalls, tc)
	}
	for _, r := range s.Results {
		tr := toolResult(r)
		st.ToolResults = append(st.ToolResults, tr)
		st.StaticToolResults = append(st.StaticToolResults, tr)
	}
	st.Response = api.Response{
		ID: s.ResponseID, Timestamp: timestamp(s.Started), ModelID: s.ModelID,
		Headers: map[string]string{}, ModelMetadata: map[string]any{},
		Messages: modelMessages(s.Messages),
		UIMessages: []api.UIMessage{{ID: res.ReplyID, Role: model.RoleAssistant,
			Metadata: api.UIMetadata{CreatedAt: timestamp(res.Started), ThreadID: res.ThreadID, ResourceID: res.ResourceID},
			Parts:    uiParts(reply)}},
	}
	return st
}

// withCost is a copy of a step's provider metadata with the run's cost
// under "companion".
func withCost(pm map[string]any, c pricing.Cost) map[string]any {
	out := make(map[string]any, len(pm)+1)
	maps.Copy(out, pm)
	out["companion"] = map[string]any{"cost": costOf(c)}
	return out
}

func toolCall(c agent.ToolCall) api.ToolCall {
	return api.ToolCall{ToolCallID: c.ID, ToolName: c.Name, Args: c.Args, ProviderMetadata: map[string]any{}}
}

func toolResult(r agent.ToolResult) api.ToolResult {
	return api.ToolResult{ToolCallID: r.CallID, ToolName: r.Tool, Result: r.Output, IsError: r.Failed()}
}

func warnings(ws []agent.Warning) []api.Warning {
	out := make([]api.Warning, 0, len(ws))
	for _, w := range ws {
		out = append(out, api.Warning{Type: w.Kind, Message: w.Message, ToolCallID: w.CallID, ToolName: w.Tool})
	}
	return out
}

func modelMessages(ms []model.Message) []api.ModelMessage {
	out := make([]api.ModelMessage, 0, len(ms))
	for _, m := range ms {
		mm := api.ModelMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, ToolName: m.ToolName}
		for _, c := range m.ToolCalls {
			mm.ToolCalls = append(mm.ToolCalls, toolCall(c))
		}
		out = append(out, mm)
	}
	return out
}

// uiParts draws a message's UI parts from the model messages it is made
// of: a text part per non-empty text, and a tool-<name> part per tool call,
// completed by its tool message (output-available with the output, or
// output-error with the error's text).
func uiParts(ms []model.Message) []api.UIPart {
	parts := []api.UIPart{}
	calls := map[string]int{}
	for _, m := range ms {
		if m.Role == model.RoleTool {
			i, ok := calls[m.ToolCallID]
			if !ok {
				continue
			}
			if m.IsError {
				parts[i].State, parts[i].ErrorText = "output-error", toolErrorText(m.Content)
			} else {
				parts[i].State, parts[i].Output = "output-available", json.RawMessage(m.Content)
			}
			continue
		}
		if m.Content != "" || (m.Role != model.RoleAssistant && len(m.ToolCalls) == 0) {
			parts = append(parts, api.UIPart{Type: "text", Text: m.Content})
		}
		for _, c := range m.ToolCalls {
			calls[c.ID] = len(parts)
			parts = append(parts, api.UIPart{Type: "tool-" + c.Name, ToolCallID: c.ID, State: "input-available", Input: c.Args})
		}
	}
	return parts
}

// toolErrorText is the message of a failed call's result, {"error": ...}.
func toolErrorText(content string) string {
	var e struct{ Error string }
	if json.Unmarshal([]byte(content), &e) != nil || e.Error == "" {
		return content
	}
	return e.Error
}

// modelMessagesOf is what a stored message holds: its model messages, or,
// when they do not decode, one message of its role and text.
func modelMessagesOf(m memory.Message) []model.Message {
	ms, err := m.ModelMessages()
	if err != nil {
		return []model.Message{{Role: m.Role, Content: m.Text}}
	}
	return ms
}

// uiMessage is a stored message, whose model messages are ms, as the API
// shows it.
func uiMessage(th memory.Thread, m memory.Message, ms []model.Message) api.UIMessage {
	return api.UIMessage{ID: m.ID, Role: m.Role, Parts: uiParts(ms), Metadata: api.UIMetadata{
		CreatedAt: timestamp(m.CreatedAt), ThreadID: th.ID, ResourceID: th.ResourceID, Pending: m.Pending,
	}}
}

// apiThread is a stored thread as the API shows it.
func apiThread(th memory.Thread) api.Thread {
	// Decoded and encoded again, the metadata reads the same from every
	// store (PostgreSQL's jsonb reorders keys).
	meta := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(th.Metadata))
	dec.UseNumber()
	_ = dec.Decode(&meta)
	if meta == nil {
		meta = map[string]any{}
	}
	return api.Thread{ID: th.ID, ResourceID: th.ResourceID, Title: th.Title, Metadata: meta,
		CreatedAt: timestamp(th.CreatedAt), UpdatedAt: timestamp(th.UpdatedAt)}
}

// requestBody describes req for a step's request.body: the model, the
// messages (instructions first), the tool names and the output limit.
func requestBody(modelID string, req model.Request) any {
	b := api.RequestBody{Model: modelID, Tools: []string{}, MaxOutputTokens: req.MaxOutputTokens}
	b.Messages = make([]api.RequestMessage, 0, len(req.Messages)+1)
	if req.System != "" {
		b.Messages = append(b.Messages, api.RequestMessage{Role: "system", Content: req.System})
	}
	for _, m := range req.Messages {
		e := api.RequestMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			e.ToolCalls = append(e.ToolCalls, api.RequestToolCall{ID: c.ID, Name: c.Name, Args: c.Args})
		}
		b.Messages = append(b.Messages, e)
	}
	for _, t := range req.Tools {
		b.Tools = append(b.Tools, t.Name)
	}
	return b
}

// usageBody is a usage report as the API shows it.
func usageBody(resourceID string, days []memory.DayUsage) api.UsageReport {
	out := api.UsageReport{ResourceID: resourceID, Currency: "USD", Days: make([]api.DayUsage, 0, len(days))}
	for _, d := range days {
		day := api.DayUsage{Day: d.Day, Tokens: d.Tokens, Cost: roundUSD(d.Cost), Threads: make([]api.ThreadUsage, 0, len(d.Threads))}
		for _, t := range d.Threads {
			day.Threads = append(day.Threads, api.ThreadUsage{ThreadID: t.ThreadID, Tokens: t.Tokens, Cost: roundUSD(t.Cost)})
		}
		out.Days = append(out.Days, day)
		out.Total.Tokens += d.Tokens
		out.Total.Cost += d.Cost
	}
	out.Total.Cost = roundUSD(out.Total.Cost)
	return out
}
