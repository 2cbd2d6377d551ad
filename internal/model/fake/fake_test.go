package fake_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/model"
	"github.com/companionhq/companion/internal/model/fake"
	_ "github.com/companionhq/companion/internal/testkit"
)

var weatherSpec = model.ToolSpec{Name: "weatherTool", Description: "Get current weather for a location", Parameters: json.RawMessage(`{"type":"object"}`)}

func request(p agent.Personality, msgs ...model.Message) model.Request {
	return model.Request{System: agent.Instructions(p, nil), Messages: msgs, Tools: []model.ToolSpec{weatherSpec}}
}

func user(s string) model.Message { return model.Message{Role: model.RoleUser, Content: s} }

func collect(t *testing.T, m *fake.Model, req model.Request) (text string, calls map[string]string, fin *model.Finish) {
	t.Helper()
	calls = map[string]string{}
	var b strings.Builder
	for p, err := range m.Stream(context.Background(), req) {
		if err != nil {
			t.Fatal(err)
		}
		switch p.Kind {
		case model.PartText:
			b.WriteString(p.Text)
		case model.PartToolCallDelta:
			calls[p.ToolCallID] += p.Text
		case model.PartFinish:
			fin = p.Finish
		}
	}
	if fin == nil {
		t.Fatal("no finish")
	}
	return b.String(), calls, fin
}

func TestDeterministic(t *testing.T) {
	m := fake.New(fake.Options{})
	for _, p := range agent.Personalities() {
		for _, msg := range []string{"How do I find calm?", "What's the weather in Berlin?"} {
			req := request(p, user(msg))
			a := fake.Answer(req)
			b := fake.Answer(req)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%s %q: two answers differ", p, msg)
			}
			var streamed []model.Part
			for part, err := range m.Stream(context.Background(), req) {
				if err != nil {
					t.Fatal(err)
				}
				streamed = append(streamed, part)
			}
			if !reflect.DeepEqual(a, streamed) {
				t.Fatalf("%s %q: Stream differs from Answer", p, msg)
			}
		}
	}
}

func TestVoices(t *testing.T) {
	m := fake.New(fake.Options{})
	seen := map[string]agent.Personality{}
	for _, p := range agent.Personalities() {
		text, calls, fin := collect(t, m, request(p, user("Should I learn the cello?")))
		if len(calls) != 0 || fin.Reason != model.FinishStop {
			t.Fatalf("%s: calls %v, finish %q", p, calls, fin.Reason)
		}
		if !strings.Contains(text, `"Should I learn the cello?"`) {
			t.Fatalf("%s: %q does not visibly answer the message", p, text)
		}
		opening := strings.SplitN(text, ".", 2)[0]
		if other, dup := seen[opening]; dup {
			t.Fatalf("%s sounds like %s: %q", p, other, opening)
		}
		seen[opening] = p
		if fin.ProviderMetadata["personality"] != string(p) {
			t.Fatalf("%s: fake read personality %v", p, fin.ProviderMetadata["personality"])
		}
	}
	// No mode line: friend.
	text, _, _ := collect(t, m, model.Request{Messages: []model.Message{user("hi")}})
	friend, _, _ := collect(t, m, request(agent.Friend, user("hi")))
	if strings.SplitN(text, ".", 2)[0] != strings.SplitN(friend, ".", 2)[0] {
		t.Fatalf("default voice %q is not friend's %q", text, friend)
	}
}

func TestRecallsPreviousUserMessage(t *testing.T) {
	m := fake.New(fake.Options{})
	text, _, fin := collect(t, m, request(agent.Friend, user("My dog is called Rex."), model.Message{Role: model.RoleAssistant, Content: "Nice!"}, user("What should I feed him?")))
	if !strings.Contains(text, `"My dog is called Rex."`) || !strings.Contains(text, `"What should I feed him?"`) {
		t.Fatalf("%q: want both the earlier and the last message", text)
	}
	if fin.Usage.CachedInputTokens == 0 {
		t.Fatal("a conversation with history reports its instructions as cached")
	}
}

func TestWeatherCalls(t *testing.T) {
	tests := []struct {
		msg  string
		want []string
	}{
		{"What's the weather in Berlin?", []string{"Berlin"}},
		{"how is the weather like in New York today?", []string{"New York"}},
		{"Weather for São Paulo please", []string{"São Paulo"}},
		{"What's the forecast in Paris and Tokyo?", []string{"Paris", "Tokyo"}},
		{"The temperature at Reykjavik right now?", []string{"Reykjavik"}},
		{"Tell me about the weather.", nil},
		{"I live in Berlin.", nil},
	}
	m := fake.New(fake.Options{})
	for _, tc := range tests {
		_, calls, fin := collect(t, m, request(agent.Friend, user(tc.msg)))
		var got []string
		for _, part := range fake.Answer(request(agent.Friend, user(tc.msg))) {
			if part.Kind == model.PartToolCallEnd {
				var args struct{ Location string }
				if err := json.Unmarshal([]byte(calls[part.ToolCallID]), &args); err != nil {
					t.Fatalf("%q: args %q: %v", tc.msg, calls[part.ToolCallID], err)
				}
				got = append(got, args.Location)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: calls for %q, want %q", tc.msg, got, tc.want)
		}
		if len(tc.want) > 0 && fin.Reason != model.FinishToolCalls {
			t.Errorf("%q: finish %q", tc.msg, fin.Reason)
		}
	}
	// Arguments arrive in several deltas.
	deltas := 0
	for _, p := range fake.Answer(request(agent.Friend, user("weather in Berlin?"))) {
		if p.Kind == model.PartToolCallDelta {
			deltas++
		}
	}
	if deltas < 3 {
		t.Fatalf("%d argument deltas, want several", deltas)
	}
	// Without the tool on offer, the fake just talks.
	req := request(agent.Friend, user("weather in Berlin?"))
	req.Tools = nil
	if _, calls, _ := collect(t, m, req); len(calls) != 0 {
		t.Fatal("called a tool it was not given")
	}
}

func TestAnswersFromToolResults(t *testing.T) {
	m := fake.New(fake.Options{})
	msgs := []model.Message{
		user("weather in Berlin and Atlantis?"),
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
			{ID: "a", Name: "weatherTool", Args: json.RawMessage(`{"location":"Berlin"}`)},
			{ID: "b", Name: "weatherTool", Args: json.RawMessage(`{"location":"Atlantis"}`)},
		}},
		{Role: model.RoleTool, ToolCallID: "a", ToolName: "weatherTool", Content: `{"temperature":4.2,"feelsLike":1.5,"humidity":81,"windSpeed":14.4,"windGust":30.2,"conditions":"Overcast","location":"Berlin"}`},
		{Role: model.RoleTool, ToolCallID: "b", ToolName: "weatherTool", IsError: true, Content: `{"error":"weatherTool failed: no place named \"Atlantis\" was found"}`},
	}
	text, calls, fin := collect(t, m, request(agent.Wanderer, msgs...))
	if len(calls) != 0 || fin.Reason != model.FinishStop {
		t.Fatalf("calls %v finish %q", calls, fin.Reason)
	}
	for _, want := range []string{"In Berlin it is 4.2°C (feels like 1.5°C) with overcast, humidity 81%, wind 14.4 km/h and gusts up to 30.2 km/h.",
		`I couldn't get the weather for Atlantis: weatherTool failed: no place named "Atlantis" was found.`} {
		if !strings.Contains(text, want) {
			t.Errorf("%q\nlacks %q", text, want)
		}
	}
}

func TestLength(t *testing.T) {
	m := fake.New(fake.Options{})
	req := request(agent.Guru, user("Tell me everything."))
	full, _, _ := collect(t, m, req)
	req.MaxOutputTokens = 5
	text, _, fin := collect(t, m, req)
	if fin.Reason != model.FinishLength || fin.Usage.OutputTokens != 5 || len(fake.Tokens(text)) != 5 || !strings.HasPrefix(full, text) {
		t.Fatalf("%q (%s, %d tokens)", text, fin.Reason, fin.Usage.OutputTokens)
	}
	req.MaxOutputTokens = 1000
	if _, _, fin := collect(t, m, req); fin.Reason != model.FinishStop {
		t.Fatalf("a limit not reached gave %q", fin.Reason)
	}
}

func TestTokens(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{{"", 0}, {"one", 1}, {" two  words ", 2}, {"a\nb\tc", 3}, {"héllo wörld", 2}}
	for _, tc := range tests {
		if got := fake.CountTokens(tc.in); got != tc.want || len(fake.Tokens(tc.in)) != tc.want {
			t.Errorf("CountTokens(%q) = %d, Tokens %d, want %d", tc.in, got, len(fake.Tokens(tc.in)), tc.want)
		}
	}
	_, _, fin := collect(t, fake.New(fake.Options{}), request(agent.Friend, user("hi")))
	if fin.Usage.InputTokens == 0 || fin.Usage.TotalTokens != fin.Usage.InputTokens+fin.Usage.OutputTokens {
		t.Fatalf("usage %+v", fin.Usage)
	}
}

func TestDelaysAndCancellation(t *testing.T) {
	m := fake.New(fake.Options{FirstTokenDelay: 20 * time.Millisecond, TokenDelay: time.Millisecond})
	start := time.Now()
	collect(t, m, request(agent.Friend, user("hi")))
	if time.Since(start) < 20*time.Millisecond {
		t.Fatal("the first-token delay was not waited")
	}
	slow := fake.New(fake.Options{TokenDelay: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	for _, err := range slow.Stream(ctx, request(agent.Friend, user("hi"))) {
		n++
		if n == 1 {
			cancel()
			continue
		}
		if err != context.Canceled {
			t.Fatalf("got %v after cancel, want context.Canceled", err)
		}
	}
	if n != 2 {
		t.Fatalf("%d parts: want one part, then the cancellation", n)
	}
}
