package openai

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// decodeStd is chunk.decode as encoding/json reads it: the rules decode
// must keep.
func decodeStd(c *chunk, data []byte) error {
	err := json.Unmarshal(data, c)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return nil
	}
	return err
}

// FuzzChunkDecode holds chunk.decode to encoding/json: for any event data,
// the same chunk and the same verdict (read, or malformed).
func FuzzChunkDecode(f *testing.F) {
	for _, s := range []string{
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}]}`,
		`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"weatherTool","arguments":"{\"loc"}}]}}]}`,
		`{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":{"reasoning_tokens":1}}}`,
		`{"choices":[{"delta":{"reasoning_content":"hm","reasoning":"hm"},"finish_reason":"stop"}]}`,
		`{"error":{"message":"overloaded","code":529}}`,
		// encoding/json's rules that another decoder could break: names in
		// any case, a repeated name, null over a value, a field of the
		// wrong type skipped while the rest is read, escapes, bad UTF-8.
		`{"ID":"a","Choices":[{"Delta":{"CONTENT":"b"}}]}`,
		`{"id":"a","id":"b","choices":[{"delta":{"content":"c"}}],"choices":[{"index":1}]}`,
		`{"id":"a","id":null,"usage":{"total_tokens":1},"usage":null}`,
		`{"choices":[{"index":"x","delta":{"content":"a"}}],"id":"y"}`,
		`{"usage":{"prompt_tokens":1e400,"completion_tokens":"3"},"id":"z"}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":1.5,"id":"q"}]}}]}`,
		`{"id":"\u00e9\ud83d\ude00\u0000","model":"\ud800"}`,
		"{\"id\":\"\xff\xfe\",\"choices\":[{\"delta\":{\"content\":\"\xc3\"}}]}",
		`{"choices":null,"id":1}`,
		`{"choices":[null,{"delta":null}],"error":null}`,
		`[1,2]`, `null`, `"s"`, `{"id":"a"} {}`, `{"id":`, ``, ` {"id":"a"} `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got, want chunk
		gotErr, wantErr := got.decode(data), decodeStd(&want, data)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("decode(%q): error %v, encoding/json: %v", data, gotErr, wantErr)
		}
		if wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("decode(%q):\n got  %#v\n want %#v", data, got, want)
		}
	})
}

// BenchmarkChunkDecode is one streamed token's chunk, read as the provider
// reads it and as encoding/json does.
func BenchmarkChunkDecode(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-fake-12345","object":"chat.completion.chunk","created":1700000000,"model":"bench","system_fingerprint":"fp_fake","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}]}`)
	for _, bc := range []struct {
		name   string
		decode func(*chunk, []byte) error
	}{{"provider", (*chunk).decode}, {"encoding-json", decodeStd}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var c chunk
				if err := bc.decode(&c, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
