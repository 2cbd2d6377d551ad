package app_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/companionhq/companion/fakes/upstream"
	"github.com/companionhq/companion/internal/agent"
	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/app"
	"github.com/companionhq/companion/internal/app/apptest"
	"github.com/companionhq/companion/internal/model/fake"
)

// TestAgentRoutes: GET /api/agents and /api/agents/{agentId} describe the
// one agent in Mastra's shape, its tools following the configuration;
// an unknown agent is 404; both need a credential when authentication
// is on.
func TestAgentRoutes(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(keys, []byte("k3y-for-user-1 user-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withAuth := func(c *app.Config) { c.Auth.APIKeysFile = keys }
	noWorkingMemory := func(c *app.Config) { c.Memory.WorkingMemory.Off = true }
	bearer := http.Header{"Authorization": {"Bearer k3y-for-user-1"}}
	tests := []struct {
		name      string
		configure func(*app.Config)
		path      string
		header    http.Header
		status    int
		list      bool     // the body is the list, keyed by agent id
		tools     []string // the tools described, in name order
	}{
		{"list", nil, "/api/agents", nil, 200, true, []string{"updateWorkingMemory", "weatherTool"}},
		{"one", nil, "/api/agents/companionAgent", nil, 200, false, []string{"updateWorkingMemory", "weatherTool"}},
		{"Mastra's client's query", nil, "/api/agents?partial=true&runtimeContext=e30%3D", nil, 200, true, []string{"updateWorkingMemory", "weatherTool"}},
		{"working memory off", noWorkingMemory, "/api/agents/companionAgent", nil, 200, false, []string{"weatherTool"}},
		{"unknown agent", nil, "/api/agents/otherAgent", nil, 404, false, nil},
		{"a repeated parameter", nil, "/api/agents?partial=true&partial=false", nil, 400, false, nil},
		{"list without a credential", withAuth, "/api/agents", nil, 401, false, nil},
		{"one without a credential", withAuth, "/api/agents/companionAgent", nil, 401, false, nil},
		{"list with a key", withAuth, "/api/agents", bearer, 200, true, []string{"updateWorkingMemory", "weatherTool"}},
		{"one with a key", withAuth, "/api/agents/companionAgent", bearer, 200, false, []string{"updateWorkingMemory", "weatherTool"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			svc := apptest.Start(t, tc.configure)
			res, b := svc.DoHeader(t, "GET", tc.path, "", tc.header)
			if res.StatusCode != tc.status {
				t.Fatalf("GET %s: %d %s, want %d", tc.path, res.StatusCode, b, tc.status)
			}
			if tc.status != 200 {
				var e api.ErrorBody
				if err := json.Unmarshal(b, &e); err != nil || e.Error == "" {
					t.Fatalf("GET %s: the error body %s is not the API's error shape (%v)", tc.path, b, err)
				}
				if tc.status == 404 && !strings.Contains(e.Error, "otherAgent") {
					t.Errorf("GET %s: the error %q does not name the agent", tc.path, e.Error)
				}
				return
			}
			var a api.MastraAgent
			if tc.list {
				var all map[string]api.MastraAgent
				if err := json.Unmarshal(b, &all); err != nil {
					t.Fatalf("GET %s: %v in %s", tc.path, err, b)
				}
				if len(all) != 1 {
					t.Fatalf("GET %s: %d agents, want companionAgent alone: %s", tc.path, len(all), b)
				}
				a = all[api.AgentID]
			} else if err := json.Unmarshal(b, &a); err != nil {
				t.Fatalf("GET %s: %v in %s", tc.path, err, b)
			}
			checkAgent(t, a, b, "fake", fake.ID, tc.tools)
		})
	}
}

// TestAgentRoutesNameTheModel: with a real provider, the agent's provider
// and modelId are the configured ones.
func TestAgentRoutesNameTheModel(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			svc, _ := p.start(t, upstream.Options{})
			res, b := svc.Do(t, "GET", "/api/agents/companionAgent", "")
			var a api.MastraAgent
			if err := json.Unmarshal(b, &a); res.StatusCode != 200 || err != nil {
				t.Fatalf("GET /api/agents/companionAgent: %d %s (%v)", res.StatusCode, b, err)
			}
			checkAgent(t, a, b, p.name, p.modelID, []string{"updateWorkingMemory", "weatherTool"})
		})
	}
}

// checkAgent checks the description a (read from body b) of the agent on
// the model named with the tools named.
func checkAgent(t *testing.T, a api.MastraAgent, b []byte, provider, modelID string, tools []string) {
	t.Helper()
	if a.Name != api.AgentID || a.Instructions != agent.Instructions(agent.Friend, nil) {
		t.Errorf("name %q and instructions %q, want companionAgent and the friend's", a.Name, a.Instructions)
	}
	if a.Provider != provider || a.ModelID != modelID || a.ModelVersion != "v2" {
		t.Errorf("provider %q, modelId %q, modelVersion %q, want %s, %s, v2", a.Provider, a.ModelID, a.ModelVersion, provider, modelID)
	}
	if a.Workflows == nil || a.Agents == nil || a.DefaultGenerateOptions == nil || a.DefaultStreamOptions == nil {
		t.Errorf("workflows, agents or default options missing, which Mastra's clients read: %s", b)
	}
	var names []string
	for name, tool := range a.Tools {
		names = append(names, name)
		if tool.ID != name || tool.Description == "" {
			t.Errorf("tool %s: id %q, description %q", name, tool.ID, tool.Description)
		}
		// Mastra's server serializes schemas with superjson: {"json": schema}.
		var schema struct {
			JSON struct {
				Type       string                     `json:"type"`
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"json"`
		}
		if err := json.Unmarshal([]byte(tool.InputSchema), &schema); err != nil || schema.JSON.Type != "object" || len(schema.JSON.Properties) == 0 {
			t.Errorf("tool %s: inputSchema %q is not a serialized object schema (%v)", name, tool.InputSchema, err)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, tools) {
		t.Errorf("tools %v, want %v", names, tools)
	}
}
