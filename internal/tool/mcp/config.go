package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Server is one entry of an mcpServers file: a stdio server (Command, Args,
// Env) or a streamable HTTP one (URL, Headers).
type Server struct {
	// Name is the entry's key; its tools are offered as <Name>_<tool>.
	Name    string
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	Headers map[string]string
	// Tools, when set, is the allow-list: only these tools of the server
	// are offered, and they are offered even when the server cannot be
	// reached at start-up.
	Tools []string
}

// serverJSON is an entry as the file spells it. Unknown fields (such as
// Claude Desktop's "disabled" or Cursor's "type") are ignored, so one file
// serves several clients.
type serverJSON struct {
	Command *string           `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     *string           `json:"url"`
	Headers map[string]string `json:"headers"`
	Tools   *[]string         `json:"tools"`
}

// Load reads an mcpServers file, in the format Claude Desktop, Cursor and
// Mastra use: {"mcpServers": {"name": {"command", "args", "env"} or
// {"url", "headers"}, optionally "tools": [allowed names]}}. Its errors name
// the file, the server and the field.
func Load(path string) ([]Server, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mcp servers: %w", err)
	}
	servers, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("mcp servers file %s: %w", path, err)
	}
	return servers, nil
}

// Parse is Load on the file's contents. The servers come sorted by name, so
// the tools are offered in the same order on every start.
func Parse(data []byte) ([]Server, error) {
	var file struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("not JSON of the form {\"mcpServers\": {...}}: %w", err)
	}
	if file.MCPServers == nil {
		return nil, errors.New(`no "mcpServers" object`)
	}
	names := make([]string, 0, len(file.MCPServers))
	for name := range file.MCPServers {
		names = append(names, name)
	}
	slices.Sort(names)
	servers := make([]Server, 0, len(names))
	for _, name := range names {
		s, err := parseServer(name, file.MCPServers[name])
		if err != nil {
			return nil, fmt.Errorf("server %q: %w", name, err)
		}
		servers = append(servers, s)
	}
	return servers, nil
}

func parseServer(name string, raw json.RawMessage) (Server, error) {
	if name == "" || strings.ContainsAny(name, " \t\n") {
		return Server{}, errors.New("the name must be non-empty and without spaces, as it prefixes the tools' names")
	}
	var j serverJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return Server{}, fmt.Errorf("not an object with command or url: %w", err)
	}
	s := Server{Name: name, Args: j.Args, Env: j.Env, Headers: j.Headers}
	switch {
	case j.Command != nil && j.URL != nil:
		return Server{}, errors.New(`"command" and "url" both set: a server is either stdio or HTTP`)
	case j.Command != nil:
		if *j.Command == "" {
			return Server{}, errors.New(`"command" is empty`)
		}
		if j.Headers != nil {
			return Server{}, errors.New(`"headers" is for HTTP servers ("url"), not "command"`)
		}
		s.Command = *j.Command
	case j.URL != nil:
		if !strings.HasPrefix(*j.URL, "http://") && !strings.HasPrefix(*j.URL, "https://") {
			return Server{}, fmt.Errorf(`"url" %q is not an http:// or https:// URL`, *j.URL)
		}
		if j.Args != nil || j.Env != nil {
			return Server{}, errors.New(`"args" and "env" are for stdio servers ("command"), not "url"`)
		}
		s.URL = *j.URL
	default:
		return Server{}, errors.New(`neither "command" (stdio) nor "url" (streamable HTTP) is set`)
	}
	if j.Tools != nil {
		if len(*j.Tools) == 0 {
			return Server{}, errors.New(`"tools" is empty: remove the server, or list the tools to offer`)
		}
		for _, t := range *j.Tools {
			if t == "" {
				return Server{}, errors.New(`"tools" has an empty name`)
			}
		}
		s.Tools = *j.Tools
	}
	return s, nil
}
