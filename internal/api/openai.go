package api

import "encoding/json"

// The OpenAI-compatible front: the wire types of POST /v1/chat/completions
// and GET /v1/models, in the shapes of OpenAI's Chat Completions API, which
// its SDKs and most chat front ends speak.

// OpenAIModelPrefix is the model id of the companion in its default
// personality; "companion-<personality>" names each personality.
const OpenAIModelPrefix = "companion"

// OpenAIChatRequest is the body of POST /v1/chat/completions: the fields
// the service reads. Others (n, tools, response_format, ...) are refused or
// ignored by the handler, as docs/api.md lists.
type OpenAIChatRequest struct {
	Model               string          `json:"model"`
	Messages            []OpenAIMessage `json:"messages"`
	Stream              bool            `json:"stream"`
	StreamOptions       *StreamOptions  `json:"stream_options"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	User                string          `json:"user"`
	ThreadID            string          `json:"thread_id"`
	N                   *int            `json:"n"`
	Tools               json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
}

// StreamOptions are a streamed request's options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// OpenAIMessage is one message of a chat completion request: its content a
// string or an array of text parts (Message decodes both).
type OpenAIMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Name    string          `json:"name"`
	// ToolCalls and ToolCallID are read to refuse client-side tools.
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

// OpenAIChatCompletion is the answer to a request without stream.
type OpenAIChatCompletion struct {
	ID      string         `json:"id"`
	Object  string         `json:"object"`
	Created int64          `json:"created"`
	Model   string         `json:"model"`
	Choices []OpenAIChoice `json:"choices"`
	Usage   OpenAIUsage    `json:"usage"`
	OpenAISafety
}

// OpenAISafety is what the companion adds to OpenAI's objects: the notices
// the user must be told with the reply, and why a processor stopped the
// run. OpenAI's SDKs keep fields they do not know; each is absent when it
// says nothing, so that an ordinary answer is OpenAI's shape exactly.
type OpenAISafety struct {
	Notices        []Notice `json:"notices,omitempty"`
	Tripwire       bool     `json:"tripwire,omitempty"`
	TripwireReason string   `json:"tripwireReason,omitempty"`
}

// OpenAIChoice is the one choice of a completion.
type OpenAIChoice struct {
	Index        int                `json:"index"`
	Message      OpenAIReplyMessage `json:"message"`
	Logprobs     *struct{}          `json:"logprobs"`
	FinishReason string             `json:"finish_reason"`
}

// OpenAIReplyMessage is the assistant's answer.
type OpenAIReplyMessage struct {
	Role    string  `json:"role"`
	Content string  `json:"content"`
	Refusal *string `json:"refusal"`
}

// OpenAIUsage counts a completion's tokens.
type OpenAIUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// OpenAIChunk is one frame of a streamed completion
// (object "chat.completion.chunk"). Usage is absent unless the request
// asked for it (stream_options.include_usage); then it is null on every
// chunk but the last, whose choices are empty. The first chunk carries the
// notices, the one with the finish reason the tripwire.
type OpenAIChunk struct {
	ID      string              `json:"id"`
	Object  string              `json:"object"`
	Created int64               `json:"created"`
	Model   string              `json:"model"`
	Choices []OpenAIChunkChoice `json:"choices"`
	Usage   any                 `json:"usage,omitempty"`
	OpenAISafety
}

// OpenAIChunkChoice is a chunk's choice: a delta, and the finish reason on
// the chunk that ends it (null before).
type OpenAIChunkChoice struct {
	Index        int         `json:"index"`
	Delta        OpenAIDelta `json:"delta"`
	Logprobs     *struct{}   `json:"logprobs"`
	FinishReason *string     `json:"finish_reason"`
}

// OpenAIDelta is what a chunk adds to the answer.
type OpenAIDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

// OpenAIModelList is the answer to GET /v1/models.
type OpenAIModelList struct {
	Object string        `json:"object"`
	Data   []OpenAIModel `json:"data"`
}

// OpenAIModel is one model id the service answers to.
type OpenAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// OpenAIErrorBody is an error in OpenAI's shape.
type OpenAIErrorBody struct {
	Error OpenAIError `json:"error"`
}

// OpenAIError is the error of an OpenAIErrorBody.
type OpenAIError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}
