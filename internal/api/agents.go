package api

// The agent routes: GET /api/agents and GET /api/agents/{agentId}, in
// Mastra 0.24's shapes, which @mastra/client-js's getAgents() and
// agent.details() read.

// MastraAgent describes an agent as Mastra's server does. The service has
// no workflows, sub-agents, default options or model list: those fields are
// empty, and present because Mastra's clients read them.
type MastraAgent struct {
	Name string `json:"name"`
	// Instructions are the agent's system instructions under its default
	// personality.
	Instructions string `json:"instructions"`
	// Tools are every tool a run may offer the model, keyed by name.
	Tools     map[string]MastraTool `json:"tools"`
	Workflows map[string]struct{}   `json:"workflows"`
	Agents    map[string]struct{}   `json:"agents"`
	// Provider and ModelID name the configured model, as the model names
	// itself (such as "fake" and "companion-fake-1").
	Provider string `json:"provider"`
	ModelID  string `json:"modelId"`
	// ModelVersion is the version of the model interface the agent's
	// streams follow, as Mastra names it: "v2", the AI SDK 5 shapes.
	ModelVersion           string         `json:"modelVersion"`
	DefaultGenerateOptions map[string]any `json:"defaultGenerateOptions"`
	DefaultStreamOptions   map[string]any `json:"defaultStreamOptions"`
}

// MastraTool describes one tool. The schemas are JSON Schema serialized as
// Mastra's server does (superjson: {"json": schema}), in a string; a tool
// with no declared output has no outputSchema.
type MastraTool struct {
	ID           string `json:"id"`
	Description  string `json:"description"`
	InputSchema  string `json:"inputSchema"`
	OutputSchema string `json:"outputSchema,omitempty"`
}

// MastraModelVersion is MastraAgent.ModelVersion.
const MastraModelVersion = "v2"
