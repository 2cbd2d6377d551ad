package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/companionhq/companion/internal/api"
	"github.com/companionhq/companion/internal/app/apptest"
)

// badRun is one bad run request: a body, or a content type for a good one.
type badRun struct {
	name        string
	body        string
	contentType string // "" is application/json; "-" sends none
	status      int
}

// runBody is a run request for the matrix's thread with field set to raw
// (raw "" leaves the field out).
func runBody(field, raw string) string {
	fields := map[string]string{
		"threadId":   `"matrix"`,
		"resourceId": `"m"`,
		"messages":   `[{"role":"user","content":"Hi"}]`,
	}
	if raw == "" {
		delete(fields, field)
	} else {
		fields[field] = raw
	}
	var parts []string
	for _, k := range []string{"threadId", "resourceId", "messages", "runtimeContext", "tracingOptions", "modelSettings", "maxSteps"} {
		if v, ok := fields[k]; ok {
			parts = append(parts, fmt.Sprintf("%q:%s", k, v))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func message(field, raw string) string {
	return runBody("messages", `[{"role":"user","content":"Hi",`+fmt.Sprintf("%q:%s", field, raw)+`}]`)
}

// badRuns lists the bad run requests: wrong types for every field, nulls,
// huge values, invalid UTF-8, deep nesting, duplicate and case-variant
// keys, wrong content types.
func badRuns() []badRun {
	var cases []badRun
	add := func(name, body string) { cases = append(cases, badRun{name: name, body: body, status: 400}) }
	wrong := map[string][]string{
		"threadId":       {`7`, `true`, `[]`, `{}`, `null`, `""`, `"  "`},
		"resourceId":     {`7`, `false`, `["m"]`, `{"id":"m"}`},
		"messages":       {`"Hi"`, `7`, `{}`, `true`, `null`, `[]`, `[null]`, `[7]`, `["Hi"]`, `[[]]`},
		"runtimeContext": {`"guru"`, `7`, `[]`, `{"metadata":"guru"}`, `{"metadata":{"personality":7}}`, `{"metadata":{"personality":"pirate"}}`, `{"metadata":{"userId":[1]}}`},
		"tracingOptions": {`"guru"`, `[]`, `{"metadata":[]}`, `{"metadata":{"personality":false}}`, `{"metadata":{"personality":"GURU!"}}`},
		"modelSettings":  {`"fast"`, `[]`, `{"maxOutputTokens":"10"}`, `{"maxOutputTokens":-1}`, `{"maxOutputTokens":1.5}`, `{"maxOutputTokens":1e40}`},
		"maxSteps":       {`"3"`, `-1`, `2.5`, `1e30`, `[]`, `true`},
	}
	for field, values := range wrong {
		for _, v := range values {
			add(field+" = "+v, runBody(field, v))
		}
	}
	for field, values := range map[string][]string{
		"role":    {`7`, `null`, `"tool"`, `"USER"`, `""`, `["user"]`},
		"content": {`7`, `null`, `""`, `{}`, `[{"type":"image","image":"x"}]`, `[7]`, `true`},
		"id":      {`7`, `[]`, `{}`},
	} {
		for _, v := range values {
			add("message "+field+" = "+v, strings.Replace(message(field, v), `"role":"user","content":"Hi",`, map[string]string{
				"role": `"content":"Hi",`, "content": `"role":"user",`, "id": `"role":"user","content":"Hi",`}[field], 1))
		}
	}
	add("missing threadId", runBody("threadId", ""))
	add("missing messages", runBody("messages", ""))
	add("only a system message", runBody("messages", `[{"role":"system","content":"Be brief."}]`))
	add("huge threadId", runBody("threadId", `"`+strings.Repeat("t", 300)+`"`))
	add("huge resourceId", runBody("resourceId", `"`+strings.Repeat("r", 300)+`"`))
	add("huge content", runBody("messages", `[{"role":"user","content":"`+strings.Repeat("x", 70<<10)+`"}]`))
	add("too many messages", runBody("messages", "["+strings.Repeat(`{"role":"user","content":"Hi"},`, 100)+`{"role":"user","content":"Hi"}]`))
	add("repeated message ids", runBody("messages", `[{"id":"a","role":"user","content":"Hi"},{"id":"a","role":"user","content":"Hi"}]`))
	add("NUL in content", runBody("messages", `[{"role":"user","content":"H\u0000i"}]`))
	add("NUL in threadId", runBody("threadId", `"a\u0000b"`))
	add("invalid UTF-8 in threadId", runBody("threadId", "\"alias-\xff\""))
	add("invalid UTF-8 in content", runBody("messages", "[{\"role\":\"user\",\"content\":\"\xc3\x28\"}]"))
	add("unpaired surrogate", runBody("threadId", `"\ud800"`))
	add("deep nesting", runBody("runtimeContext", strings.Repeat(`{"a":`, 40)+`1`+strings.Repeat(`}`, 40)))
	add("deep arrays", runBody("maxSteps", strings.Repeat(`[`, 100)+strings.Repeat(`]`, 100)))
	add("duplicate threadId", `{"threadId":"matrix","threadId":"other","resourceId":"m","messages":[{"role":"user","content":"Hi"}]}`)
	add("case-variant resourceId", `{"threadId":"matrix","resourceId":"m","RESOURCEID":"x","messages":[{"role":"user","content":"Hi"}]}`)
	add("case-variant threadId", `{"ThreadId":"matrix","resourceId":"m","messages":[{"role":"user","content":"Hi"}]}`)
	add("duplicate role", `{"threadId":"matrix","resourceId":"m","messages":[{"role":"user","role":"system","content":"Hi"}]}`)
	add("case-variant personality", runBody("runtimeContext", `{"metadata":{"Personality":"guru"}}`))
	add("not JSON", `threadId=matrix`)
	add("truncated", `{"threadId":"matrix","messages":[`)
	add("trailing data", runBody("threadId", `"matrix"`)+`{}`)
	add("an array", `[`+runBody("threadId", `"matrix"`)+`]`)
	add("a string", `"hello"`)
	add("null", `null`)
	add("empty", ``)
	add("whitespace", "  \n ")
	for _, ct := range []string{"-", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=b", "application/xml", "application/json; charset=utf-16", "application/json, text/plain", "json"} {
		cases = append(cases, badRun{name: "content type " + ct, body: runBody("threadId", `"matrix"`), contentType: ct, status: 415})
	}
	cases = append(cases, badRun{name: "body over the limit", body: runBody("messages", `[{"role":"user","content":"`+strings.Repeat("x", 1<<20)+`"}]`), status: 413})
	return cases
}

// TestBadInputMatrix sends every bad request to both run endpoints and the
// threads API: each gets a 4xx JSON error, nothing is stored, and the
// service stays up.
func TestBadInputMatrix(t *testing.T) {
	svc := apptest.Start(t, nil)
	tried, byStatus := 0, map[int]int{}
	check := func(t *testing.T, res *http.Response, b []byte, want int) {
		t.Helper()
		tried++
		byStatus[res.StatusCode]++
		if res.StatusCode != want {
			t.Fatalf("status %d, want %d: %.300s", res.StatusCode, want, b)
		}
		if ct := res.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("content type %q", ct)
		}
		var e map[string]any
		if err := json.Unmarshal(b, &e); err != nil || len(e) != 1 {
			t.Fatalf("body %.300s is not {\"error\": ...}", b)
		}
		if msg, ok := e["error"].(string); !ok || msg == "" {
			t.Fatalf("body %.300s is not {\"error\": ...}", b)
		}
	}
	for _, c := range badRuns() {
		for _, path := range []string{generatePath, streamPath} {
			t.Run(c.name+" on "+path[strings.LastIndex(path, "/")+1:], func(t *testing.T) {
				req, _ := http.NewRequest("POST", svc.URL+path, strings.NewReader(c.body))
				switch c.contentType {
				case "":
					req.Header.Set("Content-Type", "application/json")
				case "-":
				default:
					req.Header.Set("Content-Type", c.contentType)
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				check(t, res, b, c.status)
			})
		}
	}
	// A thread to aim the threads API at.
	if res, b := svc.Post(t, generatePath, `{"threadId":"kept","resourceId":"k","messages":[{"role":"user","content":"Hi"}]}`); res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	threads := []struct {
		name, method, path, body string
		status                   int
	}{
		{"list without resource", "GET", "/api/memory/threads", "", 400},
		{"repeated resourceId", "GET", "/api/memory/threads?resourceId=k&resourceId=m", "", 400},
		{"case-variant resourceId", "GET", "/api/memory/threads?resourceID=k", "", 400},
		{"repeated page", "GET", "/api/memory/threads?resourceId=k&page=1&page=2", "", 400},
		{"negative page", "GET", "/api/memory/threads?resourceId=k&page=-1", "", 400},
		{"huge page", "GET", "/api/memory/threads?resourceId=k&page=99999999999999999999", "", 400},
		{"page too far", "GET", "/api/memory/threads?resourceId=k&page=2147483647&perPage=1000", "", 400},
		{"perPage 0", "GET", "/api/memory/threads?resourceId=k&perPage=0", "", 400},
		{"perPage huge", "GET", "/api/memory/threads?resourceId=k&perPage=100000", "", 400},
		{"perPage not a number", "GET", "/api/memory/threads?resourceId=k&perPage=ten", "", 400},
		{"bad orderBy", "GET", "/api/memory/threads?resourceId=k&orderBy=title", "", 400},
		{"bad sortDirection", "GET", "/api/memory/threads?resourceId=k&sortDirection=sideways", "", 400},
		{"other agent", "GET", "/api/memory/threads?resourceId=k&agentId=x", "", 404},
		{"huge resourceId", "GET", "/api/memory/threads?resourceId=" + strings.Repeat("r", 300), "", 400},
		{"invalid UTF-8 resourceId", "GET", "/api/memory/threads?resourceId=%FF", "", 400},
		{"invalid UTF-8 threadId", "GET", "/api/memory/threads/%FF?resourceId=k", "", 400},
		{"huge threadId", "GET", "/api/memory/threads/" + strings.Repeat("t", 300) + "?resourceId=k", "", 400},
		{"blank threadId", "GET", "/api/memory/threads/%20?resourceId=k", "", 400},
		{"foreign thread", "GET", "/api/memory/threads/kept?resourceId=m", "", 403},
		{"thread without its resource", "GET", "/api/memory/threads/kept", "", 403},
		{"messages: repeated perPage", "GET", "/api/memory/threads/kept/messages?resourceId=k&perPage=1&perPage=2", "", 400},
		{"messages: bad page", "GET", "/api/memory/threads/kept/messages?resourceId=k&page=x", "", 400},
		{"patch: title a number", "PATCH", "/api/memory/threads/kept?resourceId=k", `{"title":7}`, 400},
		{"patch: title null only", "PATCH", "/api/memory/threads/kept?resourceId=k", `{"title":null}`, 400},
		{"patch: metadata a string", "PATCH", "/api/memory/threads/kept?resourceId=k", `{"metadata":"x"}`, 400},
		{"patch: metadata an array", "PATCH", "/api/memory/threads/kept?resourceId=k", `{"metadata":[1]}`, 400},
		{"patch: duplicate title", "PATCH", "/api/memory/threads/kept?resourceId=k", `{"title":"a","title":"b"}`, 400},
		{"patch: case-variant title", "PATCH", "/api/memory/threads/kept?resourceId=k", `{"Title":"a"}`, 400},
		{"patch: duplicate metadata key", "PATCH", "/api/memory/threads/kept?resourceId=k", `{"metadata":{"a":1,"a":2}}`, 400},
		{"patch: another owner", "PATCH", "/api/memory/threads/kept?resourceId=k", `{"title":"a","resourceId":"m"}`, 400},
		{"patch: huge title", "PATCH", "/api/memory/threads/kept?resourceId=k", `{"title":"` + strings.Repeat("x", 2000) + `"}`, 400},
		{"patch: NUL in metadata", "PATCH", "/api/memory/threads/kept?resourceId=k", `{"metadata":{"a":"\u0000"}}`, 400},
		{"patch: invalid UTF-8", "PATCH", "/api/memory/threads/kept?resourceId=k", "{\"title\":\"\xff\"}", 400},
		{"patch: deep", "PATCH", "/api/memory/threads/kept?resourceId=k", `{"metadata":` + strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40) + `}`, 400},
		{"patch: not JSON", "PATCH", "/api/memory/threads/kept?resourceId=k", `title=x`, 400},
		{"patch: empty", "PATCH", "/api/memory/threads/kept?resourceId=k", ``, 400},
		{"delete: foreign", "DELETE", "/api/memory/threads/kept?resourceId=m", "", 403},
		{"delete: repeated resourceId", "DELETE", "/api/memory/threads/kept?resourceId=k&resourceId=k", "", 400},
		{"wrong method", "PUT", "/api/memory/threads/kept?resourceId=k", `{}`, 405},
	}
	for _, c := range threads {
		t.Run("threads: "+c.name, func(t *testing.T) {
			res, b := svc.Do(t, c.method, c.path, c.body)
			check(t, res, b, c.status)
		})
	}
	// Nothing was stored: no thread for the matrix's resource, and the kept
	// thread is as its one turn left it.
	res, b := svc.Do(t, "GET", "/api/memory/threads?resourceId=m", "")
	var list api.ThreadList
	if err := json.Unmarshal(b, &list); err != nil || res.StatusCode != 200 || list.Total != 0 {
		t.Fatalf("resource m has threads: %d %s", res.StatusCode, b)
	}
	if n := messagesOf(t, svc, "matrix", "m"); n != -1 {
		t.Fatalf("the matrix's thread exists, with %d messages", n)
	}
	res, b = svc.Do(t, "GET", "/api/memory/threads/kept?resourceId=k", "")
	if res.StatusCode != 200 || strings.Contains(string(b), `"title":"a"`) || messagesOf(t, svc, "kept", "k") != 2 {
		t.Fatalf("the kept thread changed: %s", b)
	}
	if res, _ := svc.Do(t, "GET", "/health", ""); res.StatusCode != 200 {
		t.Fatal("the service is down")
	}
	t.Logf("%d bad requests tried: %v by status", tried, byStatus)
}
