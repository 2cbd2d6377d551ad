package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	jsonv1 "github.com/go-json-experiment/json/v1"
)

// Unmarshal decodes data into v, a pointer, by encoding/json's rules on the
// jsonv2 engine (github.com/go-json-experiment/json/v1, the encoding/json of
// GOEXPERIMENT=jsonv2): a request body decodes in about half the time and
// allocations. When that fails, v is zeroed and decoded again by
// encoding/json itself, so that a refused body gets encoding/json's error,
// which the HTTP layer words for clients.
func Unmarshal(data []byte, v any) error {
	if jsonv1.Unmarshal(data, v) == nil {
		return nil
	}
	reflect.ValueOf(v).Elem().SetZero()
	return json.Unmarshal(data, v)
}

// GenerateRequest is the body of both generate and stream.
type GenerateRequest struct {
	Messages       []Message       `json:"messages"`
	ThreadID       string          `json:"threadId"`
	ResourceID     string          `json:"resourceId,omitempty"`
	RuntimeContext *RuntimeContext `json:"runtimeContext,omitempty"`
	TracingOptions *TracingOptions `json:"tracingOptions,omitempty"`
	// ModelSettings and MaxSteps lower the server's limits for one run
	// (they never raise them).
	ModelSettings *ModelSettings `json:"modelSettings,omitempty"`
	MaxSteps      int            `json:"maxSteps,omitempty"`
}

// RuntimeContext carries per-run metadata.
type RuntimeContext struct {
	Metadata RuntimeMetadata `json:"metadata"`
}

// RuntimeMetadata is the metadata of a RuntimeContext.
type RuntimeMetadata struct {
	Personality string `json:"personality,omitempty"`
	UserID      string `json:"userId,omitempty"`
	// Locale is the user's (a BCP 47 tag such as en-US), for the texts
	// the service shows them (a crisis referral); the request's
	// Accept-Language when absent.
	Locale string `json:"locale,omitempty"`
	// Minor, set by an operator's app that knows its user is a minor,
	// applies the safety rules for minors. It can only add protections:
	// false does not undo a credential's minor mark.
	Minor bool `json:"minor,omitempty"`
}

// TracingOptions carries the alternative personality field.
type TracingOptions struct {
	Metadata TracingMetadata `json:"metadata"`
}

// TracingMetadata is the metadata of TracingOptions.
type TracingMetadata struct {
	Personality string `json:"personality,omitempty"`
}

// ModelSettings tunes the model for one run.
type ModelSettings struct {
	MaxOutputTokens int `json:"maxOutputTokens,omitempty"`
}

// Message is one message of a conversation. Content is a string; on the
// wire it may also be an array of text parts ([{"type":"text","text":"..."}]),
// as AI SDK clients send it, which decodes to the parts' texts joined.
type Message struct {
	ID      string `json:"id,omitempty"`
	Role    string `json:"role"`
	Content string `json:"content"`
}

// UnmarshalJSON accepts content as a string or as an array of text parts.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		ID      *json.RawMessage `json:"id"`
		Role    *json.RawMessage `json:"role"`
		Content *json.RawMessage `json:"content"`
	}
	if err := Unmarshal(b, &raw); err != nil {
		return errors.New("must be an object with role and content")
	}
	*m = Message{}
	if raw.ID != nil && !isNull(*raw.ID) {
		if err := Unmarshal(*raw.ID, &m.ID); err != nil {
			return errors.New("id must be a string")
		}
	}
	if raw.Role != nil && !isNull(*raw.Role) {
		if err := Unmarshal(*raw.Role, &m.Role); err != nil {
			return errors.New("role must be a string")
		}
	}
	if raw.Content == nil || isNull(*raw.Content) {
		return nil
	}
	c := bytes.TrimSpace(*raw.Content)
	if len(c) > 0 && c[0] == '"' {
		if err := Unmarshal(c, &m.Content); err != nil {
			return errors.New("content must be a string or an array of text parts")
		}
		return nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := Unmarshal(c, &parts); err != nil {
		return errors.New("content must be a string or an array of text parts")
	}
	var sb strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return fmt.Errorf("content part of type %q is not supported: only text parts are", p.Type)
		}
		sb.WriteString(p.Text)
	}
	m.Content = sb.String()
	return nil
}

func isNull(b []byte) bool { return string(bytes.TrimSpace(b)) == "null" }
