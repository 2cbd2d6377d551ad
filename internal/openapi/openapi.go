// Package openapi holds the OpenAPI 3.1 document of the companion API
// (openapi.yaml), which the service serves as JSON at GET /openapi.json. The document is
// written by hand and checked against the service's real responses by this
// package's test, so that the two cannot drift apart.
package openapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"go.yaml.in/yaml/v4"
)

// Path is where the service serves the document.
const Path = "/openapi.json"

//go:embed openapi.yaml
var document []byte

// asJSON converts the embedded document once.
var asJSON = sync.OnceValues(func() ([]byte, error) { return toJSON(document) })

// Spec is the document as JSON, with its keys in the order they are written.
func Spec() []byte {
	b, err := asJSON()
	if err != nil {
		// The embedded document is fixed at build time, and the tests
		// convert it: only a broken build gets here.
		panic(fmt.Sprintf("openapi: the embedded document does not convert to JSON: %v", err))
	}
	return bytes.Clone(b)
}

// toJSON converts a YAML document to JSON. Mapping keys are always strings
// (a status code such as 200 stays "200"), aliases are expanded, and keys
// keep their order.
func toJSON(doc []byte) ([]byte, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := writeNode(&buf, &root); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeNode(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return fmt.Errorf("line %d: want one document", n.Line)
		}
		return writeNode(buf, n.Content[0])
	case yaml.AliasNode:
		return writeNode(buf, n.Alias)
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
				return fmt.Errorf("line %d: mapping keys must be plain scalars", k.Line)
			}
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeJSON(buf, k.Value); err != nil {
				return err
			}
			buf.WriteByte(':')
			if err := writeNode(buf, v); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeNode(buf, c); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case yaml.ScalarNode:
		var v any
		switch n.ShortTag() {
		case "!!str":
			v = n.Value
		case "!!int", "!!float", "!!bool", "!!null":
			if err := n.Decode(&v); err != nil {
				return fmt.Errorf("line %d: %w", n.Line, err)
			}
		default:
			return fmt.Errorf("line %d: scalar of type %s has no JSON form", n.Line, n.ShortTag())
		}
		return writeJSON(buf, v)
	}
	return fmt.Errorf("line %d: unexpected YAML node", n.Line)
}

// writeJSON writes v as JSON, leaving <, > and & as they are.
func writeJSON(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	return nil
}
