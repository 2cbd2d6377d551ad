package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/model"
)

// AgentInfo describes the service's agent for the agent routes.
type AgentInfo struct {
	// Instructions are the system instructions of a run that names no
	// personality.
	Instructions string
	// Tools are every tool a run may offer the model.
	Tools []model.ToolSpec
	// Provider and ModelID name the model the agent runs on.
	Provider, ModelID string
}

// handleListAgents serves GET /api/agents: the one agent, keyed by its id,
// as Mastra's server lists agents.
func (s *Server) handleListAgents() http.HandlerFunc {
	return s.answerJSON(func(_ http.ResponseWriter, r *http.Request) (any, error) {
		if err := agentQuery(r); err != nil {
			return nil, err
		}
		return map[string]api.MastraAgent{api.AgentID: s.mastraAgent()}, nil
	})
}

// handleGetAgent serves GET /api/agents/{agentId}: the agent, as Mastra's
// server describes one.
func (s *Server) handleGetAgent() http.HandlerFunc {
	return s.answerJSON(func(_ http.ResponseWriter, r *http.Request) (any, error) {
		if err := agentID(chi.URLParam(r, "agentId")); err != nil {
			return nil, err
		}
		if err := agentQuery(r); err != nil {
			return nil, err
		}
		return s.mastraAgent(), nil
	})
}

// agentQuery reads the agent routes' query. Mastra's client may send a
// runtimeContext and partial=true; the agent does not depend on the
// runtime context, and the whole description is a superset of the partial
// one, so both are read only to be refused when ambiguous.
func agentQuery(r *http.Request) error {
	_, err := strictQuery(r.URL.RawQuery, "runtimeContext", "partial")
	return err
}

// mastraAgent projects the agent's description onto Mastra's shape.
func (s *Server) mastraAgent() api.MastraAgent {
	info := s.cfg.Agent
	tools := make(map[string]api.MastraTool, len(info.Tools))
	for _, t := range info.Tools {
		tools[t.Name] = api.MastraTool{ID: t.Name, Description: t.Description, InputSchema: superjson(t.Parameters)}
	}
	return api.MastraAgent{
		Name:                   api.AgentID,
		Instructions:           info.Instructions,
		Tools:                  tools,
		Workflows:              map[string]struct{}{},
		Agents:                 map[string]struct{}{},
		Provider:               info.Provider,
		ModelID:                info.ModelID,
		ModelVersion:           api.MastraModelVersion,
		DefaultGenerateOptions: map[string]any{},
		DefaultStreamOptions:   map[string]any{},
	}
}

// superjson serializes a JSON Schema as Mastra's server does: superjson's
// stringify of a plain object, {"json": schema}, as a string.
func superjson(schema json.RawMessage) string {
	if len(schema) == 0 {
		schema = json.RawMessage(`{}`)
	}
	b, err := json.Marshal(struct {
		JSON json.RawMessage `json:"json"`
	}{schema})
	if err != nil {
		// A tool's schema is valid JSON by construction; this one is not.
		b, _ = json.Marshal(struct {
			JSON struct{} `json:"json"`
		}{})
	}
	return string(b)
}
