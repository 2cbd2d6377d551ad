package apitest

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// kind names the JSON types the spec's tables use.
type kind int

const (
	kString kind = iota
	kNumber
	kBool
	kObject
	kArray
)

func (k kind) String() string {
	return [...]string{"string", "number", "boolean", "object", "array"}[k]
}

func kindOf(v any) (kind, bool) {
	switch v.(type) {
	case string:
		return kString, true
	case float64:
		return kNumber, true
	case bool:
		return kBool, true
	case map[string]any:
		return kObject, true
	case []any:
		return kArray, true
	}
	return 0, false // null
}

var usageFields = map[string]kind{
	"inputTokens": kNumber, "outputTokens": kNumber, "totalTokens": kNumber,
	"reasoningTokens": kNumber, "cachedInputTokens": kNumber,
}

var generateFields = map[string]kind{
	"text": kString, "usage": kObject, "steps": kArray, "finishReason": kString,
	"warnings": kArray, "providerMetadata": kObject, "traceId": kString, "request": kObject,
	"reasoning": kArray, "toolCalls": kArray, "toolResults": kArray, "sources": kArray,
	"files": kArray, "response": kObject, "totalUsage": kObject, "tripwire": kBool,
	"tripwireReason": kString,
}

var stepFields = map[string]kind{
	"stepType": kString, "sources": kArray, "files": kArray, "reasoning": kArray,
	"staticToolCalls": kArray, "staticToolResults": kArray, "warnings": kArray,
	"toolCalls": kArray, "dynamicToolCalls": kArray, "toolResults": kArray,
	"dynamicToolResults": kArray, "content": kArray, "text": kString, "reasoningText": kString,
	"finishReason": kString, "usage": kObject, "totalUsage": kObject, "request": kObject,
	"response": kObject, "providerMetadata": kObject, "tripwire": kBool,
	"tripwireReason": kString, "traceId": kString,
}

var responseFields = map[string]kind{
	"id": kString, "timestamp": kString, "modelId": kString, "headers": kObject,
	"modelMetadata": kObject, "messages": kArray, "uiMessages": kArray,
}

var toolCallFields = map[string]kind{"toolCallId": kString, "toolName": kString, "args": kObject, "providerMetadata": kObject}
var toolResultFields = map[string]kind{"toolCallId": kString, "toolName": kString, "result": kObject}

// CheckGenerateBody verifies that body has every field of the spec's
// generate table with its JSON type, recursively: usage objects carry all
// five counters; each step every step field; each response its fields; tool
// calls and results theirs; each UI message id, role, parts and metadata
// with createdAt (ISO 8601), threadId and resourceId.
func CheckGenerateBody(body []byte) error {
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("generate body is not a JSON object: %w", err)
	}
	c := &checker{}
	c.object("", doc, generateFields)
	c.usage("usage", doc["usage"])
	c.usage("totalUsage", doc["totalUsage"])
	c.request("request", doc["request"])
	c.response("response", doc["response"], true)
	c.each("toolCalls", doc["toolCalls"], toolCallFields)
	c.each("toolResults", doc["toolResults"], toolResultFields)
	steps, _ := doc["steps"].([]any)
	if len(steps) == 0 {
		c.fail("steps: a run has at least one step")
	}
	for i, s := range steps {
		p := fmt.Sprintf("steps[%d]", i)
		sm, ok := s.(map[string]any)
		if !ok {
			c.fail("%s: not an object", p)
			continue
		}
		c.object(p, sm, stepFields)
		c.usage(p+".usage", sm["usage"])
		c.usage(p+".totalUsage", sm["totalUsage"])
		c.request(p+".request", sm["request"])
		c.response(p+".response", sm["response"], false)
		for _, f := range []string{"toolCalls", "staticToolCalls", "dynamicToolCalls"} {
			c.each(p+"."+f, sm[f], toolCallFields)
		}
		for _, f := range []string{"toolResults", "staticToolResults", "dynamicToolResults"} {
			c.each(p+"."+f, sm[f], toolResultFields)
		}
		c.each(p+".content", sm["content"], map[string]kind{"type": kString, "text": kString})
	}
	return errors.Join(c.errs...)
}

type checker struct{ errs []error }

func (c *checker) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

func (c *checker) object(path string, m map[string]any, fields map[string]kind) {
	for name, want := range fields {
		v, present := m[name]
		p := name
		if path != "" {
			p = path + "." + name
		}
		if !present {
			c.fail("%s: missing", p)
			continue
		}
		got, ok := kindOf(v)
		if !ok {
			c.fail("%s: null, want %s", p, want)
		} else if got != want {
			c.fail("%s: %s, want %s", p, got, want)
		}
	}
}

func (c *checker) usage(path string, v any) {
	if m, ok := v.(map[string]any); ok {
		c.object(path, m, usageFields)
	}
}

func (c *checker) request(path string, v any) {
	if m, ok := v.(map[string]any); ok {
		if _, ok := m["body"].(map[string]any); !ok {
			c.fail("%s.body: missing or not an object", path)
		}
	}
}

func (c *checker) each(path string, v any, fields map[string]kind) {
	arr, _ := v.([]any)
	for i, e := range arr {
		p := fmt.Sprintf("%s[%d]", path, i)
		if m, ok := e.(map[string]any); ok {
			c.object(p, m, fields)
		} else {
			c.fail("%s: not an object", p)
		}
	}
}

func (c *checker) response(path string, v any, top bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	c.object(path, m, responseFields)
	c.timestamp(path+".timestamp", m["timestamp"])
	ui, _ := m["uiMessages"].([]any)
	if top && len(ui) == 0 {
		c.fail("%s.uiMessages: empty, want the run's messages", path)
	}
	for i, u := range ui {
		p := fmt.Sprintf("%s.uiMessages[%d]", path, i)
		um, ok := u.(map[string]any)
		if !ok {
			c.fail("%s: not an object", p)
			continue
		}
		c.object(p, um, map[string]kind{"id": kString, "role": kString, "metadata": kObject, "parts": kArray})
		if md, ok := um["metadata"].(map[string]any); ok {
			c.object(p+".metadata", md, map[string]kind{"createdAt": kString, "threadId": kString, "resourceId": kString})
			c.timestamp(p+".metadata.createdAt", md["createdAt"])
		}
		c.each(p+".parts", um["parts"], map[string]kind{"type": kString})
	}
}

func (c *checker) timestamp(path string, v any) {
	s, _ := v.(string)
	if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
		c.fail("%s: %q is not an ISO 8601 time", path, s)
	}
}
