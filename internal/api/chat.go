package api

import "encoding/json"

// ChatRequest is the body of POST /api/agents/{agentId}/chat, as the AI
// SDK's DefaultChatTransport sends it: the chat (a thread) and its whole
// conversation as UI messages, and whatever the transport's body option
// adds (resourceId, the personality).
type ChatRequest struct {
	ID             string          `json:"id"`
	Messages       []ChatMessage   `json:"messages"`
	Trigger        string          `json:"trigger"`
	MessageID      string          `json:"messageId"`
	ResourceID     string          `json:"resourceId"`
	Personality    string          `json:"personality"`
	RuntimeContext *RuntimeContext `json:"runtimeContext"`
	TracingOptions *TracingOptions `json:"tracingOptions"`
}

// ChatMessage is a UI message of a chat request: parts of any type, each
// kept raw so that the one at fault can be named; only text parts are read
// (ChatPart).
type ChatMessage struct {
	ID    string            `json:"id"`
	Role  string            `json:"role"`
	Parts []json.RawMessage `json:"parts"`
}

// ChatPart is what the service reads of a ChatMessage's part: its type,
// and a text part's text.
type ChatPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}
