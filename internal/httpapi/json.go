package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
)

// newEncoder encodes JSON to w without escaping <, > and &: the API speaks
// to programs, not to HTML pages, and text reads better unescaped. Encode
// ends each value with a newline.
func newEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// writeJSON writes v as the response body with status, ending in a newline.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	if err := newEncoder(&buf).Encode(v); err != nil {
		// Only a bug gets here: the API's types always encode.
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":"internal server error: the response could not be encoded"}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
