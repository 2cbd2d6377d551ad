package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// marshal encodes v as JSON without escaping <, > and &: the API speaks to
// programs, not to HTML pages, and text reads better unescaped.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// writeJSON writes v as the response body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := marshal(v)
	if err != nil {
		// Only a bug gets here: the API's types always encode.
		status, b = http.StatusInternalServerError, []byte(`{"error":"internal server error: the response could not be encoded"}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
