package openmeteo_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/companionhq/companion/fakes/openmeteo"

	_ "github.com/companionhq/companion/internal/testkit"
)

const allCurrent = "temperature_2m,apparent_temperature,relative_humidity_2m,wind_speed_10m,wind_gusts_10m,weather_code"

// get sends a GET for target to h and returns the status, headers and body.
func get(t *testing.T, h http.Handler, target string) (int, http.Header, []byte) {
	t.Helper()
	return do(t, h, http.MethodGet, target)
}

func do(t *testing.T, h http.Handler, method, target string) (int, http.Header, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	res := rec.Result()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, body
}

func search(name string) string {
	return "/v1/search?" + url.Values{"name": {name}, "count": {"1"}}.Encode()
}

func forecast(lat, lon float64, current string) string {
	return "/v1/forecast?" + url.Values{
		"latitude":  {strconv.FormatFloat(lat, 'f', -1, 64)},
		"longitude": {strconv.FormatFloat(lon, 'f', -1, 64)},
		"current":   {current},
	}.Encode()
}

// decode unmarshals body into a generic object, failing on anything else.
func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, body)
	}
	return m
}

func keys(m map[string]any) map[string]bool {
	k := map[string]bool{}
	for key := range m {
		k[key] = true
	}
	return k
}

func requireKeys(t *testing.T, what string, m map[string]any, want ...string) {
	t.Helper()
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Errorf("%s lacks key %q: has %v", what, k, keys(m))
		}
	}
}

func TestSearchWireFormat(t *testing.T) {
	s := openmeteo.New()
	for _, p := range openmeteo.Places() {
		t.Run(p.Name, func(t *testing.T) {
			status, header, body := get(t, s, search(p.Name))
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, body)
			}
			if ct := header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("Content-Type = %q", ct)
			}
			m := decode(t, body)
			requireKeys(t, "response", m, "results", "generationtime_ms")
			results, ok := m["results"].([]any)
			if !ok || len(results) != 1 {
				t.Fatalf("results = %#v, want one result", m["results"])
			}
			r := results[0].(map[string]any)
			requireKeys(t, "result", r, "id", "name", "latitude", "longitude", "elevation",
				"feature_code", "country_code", "timezone", "country")
			if r["name"] != p.Name || r["latitude"] != p.Latitude || r["longitude"] != p.Longitude ||
				r["id"] != float64(p.ID) || r["country_code"] != p.CountryCode || r["timezone"] != p.Timezone {
				t.Errorf("result = %v, want the fixture %+v", r, p)
			}
		})
	}
}

func TestSearchBerlinBytes(t *testing.T) {
	_, _, body := get(t, openmeteo.New(), search("Berlin"))
	const want = `{"results":[{"id":2950159,"name":"Berlin","latitude":52.52437,"longitude":13.41053,"elevation":74.0,` +
		`"feature_code":"PPLC","country_code":"DE","timezone":"Europe/Berlin","population":3426354,"country":"Germany",` +
		`"admin1":"Land Berlin"}],"generationtime_ms":0.5}`
	if string(body) != want {
		t.Errorf("body =\n%s\nwant\n%s", body, want)
	}
}

func TestSearchMatching(t *testing.T) {
	s := openmeteo.New()
	tests := []struct {
		query, want string
	}{
		{"berlin", "Berlin"},
		{"NEW YORK", "New York"},
		{"  Tokyo  ", "Tokyo"},
		{"Reykjavik", "Reykjavík"},
		{"REYKJAVÍK", "Reykjavík"},
		{"errorville", "Errorville"},
	}
	for _, tt := range tests {
		_, _, body := get(t, s, search(tt.query))
		var resp struct {
			Results []struct{ Name string }
		}
		if err := json.Unmarshal(body, &resp); err != nil {
			t.Fatal(err)
		}
		if len(resp.Results) != 1 || resp.Results[0].Name != tt.want {
			t.Errorf("search %q = %s, want %s", tt.query, body, tt.want)
		}
	}
}

func TestSearchNotFound(t *testing.T) {
	s := openmeteo.New()
	for _, name := range []string{openmeteo.NotFoundPlace, "Atlantis", "Berl", "Berlin Berlin", "Nowhere at all"} {
		status, _, body := get(t, s, search(name))
		if status != http.StatusOK {
			t.Errorf("%q: status %d", name, status)
		}
		// Like the real API: no results key at all.
		if string(body) != `{"generationtime_ms":0.3}` {
			t.Errorf("%q: body = %s", name, body)
		}
	}
}

func TestForecastWireFormat(t *testing.T) {
	s := openmeteo.New()
	for _, p := range openmeteo.Places() {
		if p.ForecastFails {
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			status, header, body := get(t, s, forecast(p.Latitude, p.Longitude, allCurrent))
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, body)
			}
			if ct := header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("Content-Type = %q", ct)
			}
			m := decode(t, body)
			requireKeys(t, "response", m, "latitude", "longitude", "generationtime_ms", "utc_offset_seconds",
				"timezone", "timezone_abbreviation", "elevation", "current_units", "current")
			units := m["current_units"].(map[string]any)
			wantUnits := map[string]any{
				"time": "iso8601", "interval": "seconds", "temperature_2m": "°C", "apparent_temperature": "°C",
				"relative_humidity_2m": "%", "wind_speed_10m": "km/h", "wind_gusts_10m": "km/h", "weather_code": "wmo code",
			}
			if len(units) != len(wantUnits) {
				t.Errorf("current_units = %v, want %v", units, wantUnits)
			}
			for k, v := range wantUnits {
				if units[k] != v {
					t.Errorf("current_units[%s] = %v, want %v", k, units[k], v)
				}
			}
			cur := m["current"].(map[string]any)
			want := map[string]any{
				"time": "2026-01-15T12:00", "interval": 900.0,
				"temperature_2m": p.Weather.Temperature, "apparent_temperature": p.Weather.ApparentTemperature,
				"relative_humidity_2m": float64(p.Weather.RelativeHumidity), "wind_speed_10m": p.Weather.WindSpeed,
				"wind_gusts_10m": p.Weather.WindGusts, "weather_code": float64(p.Weather.WeatherCode),
			}
			if len(cur) != len(want) {
				t.Errorf("current = %v, want %v", cur, want)
			}
			for k, v := range want {
				if cur[k] != v {
					t.Errorf("current[%s] = %v, want %v", k, cur[k], v)
				}
			}
		})
	}
}

func TestForecastBerlinBytes(t *testing.T) {
	_, _, body := get(t, openmeteo.New(), forecast(52.52437, 13.41053, allCurrent))
	const want = `{"latitude":52.52,"longitude":13.41,"generationtime_ms":0.05,"utc_offset_seconds":0,"timezone":"GMT",` +
		`"timezone_abbreviation":"GMT","elevation":74.0,` +
		`"current_units":{"time":"iso8601","interval":"seconds","temperature_2m":"°C","apparent_temperature":"°C",` +
		`"relative_humidity_2m":"%","wind_speed_10m":"km/h","wind_gusts_10m":"km/h","weather_code":"wmo code"},` +
		`"current":{"time":"2026-01-15T12:00","interval":900,"temperature_2m":3.2,"apparent_temperature":-0.4,` +
		`"relative_humidity_2m":81,"wind_speed_10m":14.8,"wind_gusts_10m":29.5,"weather_code":3}}`
	if string(body) != want {
		t.Errorf("body =\n%s\nwant\n%s", body, want)
	}
}

func TestForecastVariablesInRequestedOrder(t *testing.T) {
	_, _, body := get(t, openmeteo.New(), forecast(51.50853, -0.12574, "weather_code,temperature_2m,weather_code"))
	want := `"current_units":{"time":"iso8601","interval":"seconds","weather_code":"wmo code","temperature_2m":"°C"},` +
		`"current":{"time":"2026-01-15T12:00","interval":900,"weather_code":51,"temperature_2m":8.4}}`
	if !bytes.HasSuffix(body, []byte(want)) {
		t.Errorf("body = %s\nwant suffix %s", body, want)
	}
}

func TestForecastUnknownCoordinates(t *testing.T) {
	s := openmeteo.New()
	for _, c := range [][2]float64{{0, 0}, {-89.9, 179.9}, {10.5, -20.25}, {52.6, 13.41053}} {
		target := forecast(c[0], c[1], allCurrent)
		status, _, body := get(t, s, target)
		if status != http.StatusOK {
			t.Fatalf("%v: status %d: %s", c, status, body)
		}
		cur := decode(t, body)["current"].(map[string]any)
		for _, k := range strings.Split(allCurrent, ",") {
			if _, ok := cur[k].(float64); !ok {
				t.Errorf("%v: current[%s] = %#v, want a number", c, k, cur[k])
			}
		}
		if h := cur["relative_humidity_2m"].(float64); h < 0 || h > 100 {
			t.Errorf("%v: humidity %v out of range", c, h)
		}
		if g, w := cur["wind_gusts_10m"].(float64), cur["wind_speed_10m"].(float64); g < w {
			t.Errorf("%v: gusts %v below wind %v", c, g, w)
		}
		if _, _, again := get(t, s, target); !bytes.Equal(body, again) {
			t.Errorf("%v: second answer differs:\n%s\n%s", c, body, again)
		}
	}
}

func TestForecastErrorville(t *testing.T) {
	var ev openmeteo.Place
	for _, p := range openmeteo.Places() {
		if p.Name == openmeteo.FailingPlace {
			ev = p
		}
	}
	if !ev.ForecastFails {
		t.Fatalf("no failing fixture named %s", openmeteo.FailingPlace)
	}
	status, header, body := get(t, openmeteo.New(), forecast(ev.Latitude, ev.Longitude, allCurrent))
	if status != http.StatusInternalServerError {
		t.Errorf("status %d, want 500", status)
	}
	if ct := header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	const want = `{"error":true,"reason":"Internal server error: the forecast model is unavailable"}`
	if string(body) != want {
		t.Errorf("body = %s, want %s", body, want)
	}
}

func TestBadRequests(t *testing.T) {
	s := openmeteo.New()
	tests := []struct {
		name, target, reason string
	}{
		{"search without name", "/v1/search?count=1", "Value of type 'String' required for key 'name'."},
		{"search with empty name", "/v1/search?name=&count=1", "Value of type 'String' required for key 'name'."},
		{"search with bad count", "/v1/search?name=Berlin&count=0", "Parameter count must be between 1 and 100."},
		{"forecast without latitude", "/v1/forecast?longitude=13.4&current=temperature_2m", "Value of type 'Float' required for key 'latitude'."},
		{"forecast without longitude", "/v1/forecast?latitude=52.5&current=temperature_2m", "Value of type 'Float' required for key 'longitude'."},
		{"forecast without current", "/v1/forecast?latitude=52.5&longitude=13.4", "Value of type 'String' required for key 'current'."},
		{"forecast with bad latitude", "/v1/forecast?latitude=north&longitude=13.4&current=temperature_2m", "Cannot initialize Float from invalid String value north for key latitude"},
		{"forecast with latitude out of range", "/v1/forecast?latitude=100&longitude=13.4&current=temperature_2m", "Latitude must be in range of -90 to 90°. Given: 100.0."},
		{"forecast with longitude out of range", "/v1/forecast?latitude=10&longitude=-200&current=temperature_2m", "Longitude must be in range of -180 to 180°. Given: -200.0."},
		{"forecast with unknown variable", "/v1/forecast?latitude=52.5&longitude=13.4&current=temperature_2m,snowmen", "Cannot initialize ForecastVariable from invalid String value snowmen for key current"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := get(t, s, tt.target)
			if status != http.StatusBadRequest {
				t.Errorf("status %d, want 400", status)
			}
			var e struct {
				Error  *bool   `json:"error"`
				Reason *string `json:"reason"`
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Error == nil || !*e.Error || e.Reason == nil {
				t.Fatalf("body %s is not the error shape", body)
			}
			if *e.Reason != tt.reason {
				t.Errorf("reason = %q, want %q", *e.Reason, tt.reason)
			}
			if len(decode(t, body)) != 2 {
				t.Errorf("body %s has keys beyond error and reason", body)
			}
		})
	}
}

func TestMethodAndPath(t *testing.T) {
	s := openmeteo.New()
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodHead} {
		status, header, _ := do(t, s, method, search("Berlin"))
		if status != http.StatusMethodNotAllowed || header.Get("Allow") != http.MethodGet {
			t.Errorf("%s: status %d, Allow %q; want 405 and GET", method, status, header.Get("Allow"))
		}
	}
	status, _, body := do(t, s, http.MethodPost, forecast(1, 2, allCurrent))
	if status != http.StatusMethodNotAllowed || string(body) != `{"error":true,"reason":"Method POST is not allowed"}` {
		t.Errorf("POST forecast: %d %s", status, body)
	}
	if status, _, _ := get(t, s, "/v1/elevation?latitude=1&longitude=2"); status != http.StatusNotFound {
		t.Errorf("unknown path: status %d, want 404", status)
	}
}

func TestDeterministic(t *testing.T) {
	targets := []string{
		search("Berlin"), search("Reykjavik"), search("Atlantis"),
		forecast(35.6895, 139.69171, allCurrent), forecast(12.3456, -45.6789, allCurrent),
		forecast(-12.5, 77.125, allCurrent), "/v1/forecast?latitude=1",
	}
	a, b := openmeteo.New(), openmeteo.New()
	for _, target := range targets {
		s1, _, b1 := get(t, a, target)
		s2, _, b2 := get(t, a, target)
		s3, _, b3 := get(t, b, target)
		if s1 != s2 || s1 != s3 || !bytes.Equal(b1, b2) || !bytes.Equal(b1, b3) {
			t.Errorf("%s: answers differ:\n%d %s\n%d %s\n%d %s", target, s1, b1, s2, b2, s3, b3)
		}
	}
}

func TestRequests(t *testing.T) {
	s := openmeteo.New()
	srv := httptest.NewServer(s)
	defer srv.Close()
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Go(func() {
			target := search("Paris")
			if i%3 == 0 {
				target = forecast(48.85341, 2.3488, allCurrent)
			}
			res, err := http.Get(srv.URL + target)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
		})
	}
	wg.Wait()
	// Failed requests count too.
	get(t, s, "/v1/search")
	do(t, s, http.MethodPost, "/v1/forecast")
	if n := s.Requests(openmeteo.SearchPath); n != 21 {
		t.Errorf("Requests(search) = %d, want 21", n)
	}
	if n := s.Requests(openmeteo.ForecastPath); n != 11 {
		t.Errorf("Requests(forecast) = %d, want 11", n)
	}
	if n := s.Requests("/v1/other"); n != 0 {
		t.Errorf("Requests(other) = %d, want 0", n)
	}
}

func TestPlacesAreDistinct(t *testing.T) {
	seen := map[openmeteo.Weather]string{}
	codes := map[int]bool{}
	resolving := 0
	for _, p := range openmeteo.Places() {
		if p.ForecastFails {
			continue
		}
		resolving++
		if other, ok := seen[p.Weather]; ok {
			t.Errorf("%s and %s have the same weather", p.Name, other)
		}
		seen[p.Weather] = p.Name
		codes[p.Weather.WeatherCode] = true
	}
	if resolving < 8 {
		t.Errorf("%d resolving places, want at least 8", resolving)
	}
	if len(codes) < 5 {
		t.Errorf("only %d distinct weather codes", len(codes))
	}
	// Places returns a fresh copy each time.
	p := openmeteo.Places()
	p[0].Name = "Changed"
	if openmeteo.Places()[0].Name == "Changed" {
		t.Error("Places shares its slice between calls")
	}
}
