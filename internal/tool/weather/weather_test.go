package weather_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/companionhq/companion/fakes/openmeteo"
	"github.com/companionhq/companion/internal/tool/weather"

	_ "github.com/companionhq/companion/internal/testkit"
)

// newFake starts the fake Open-Meteo and returns it with its URL.
func newFake(t *testing.T) (*openmeteo.Server, string) {
	t.Helper()
	fake := openmeteo.New()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return fake, srv.URL
}

// newTool returns a tool whose both base URLs are base.
func newTool(base string, timeout time.Duration) *weather.Tool {
	return weather.New(weather.Config{GeocodingURL: base, ForecastURL: base, Timeout: timeout})
}

func run(t *testing.T, tool *weather.Tool, args string) (weather.Result, error) {
	t.Helper()
	out, err := tool.Run(context.Background(), json.RawMessage(args))
	if err != nil {
		if out != nil {
			t.Errorf("Run returned %#v with error %v; want nil", out, err)
		}
		return weather.Result{}, err
	}
	r, ok := out.(weather.Result)
	if !ok {
		t.Fatalf("Run returned %T, want weather.Result", out)
	}
	return r, nil
}

func TestDeclaration(t *testing.T) {
	tool := weather.New(weather.Config{})
	if got := tool.Name(); got != "weatherTool" {
		t.Errorf("Name() = %q", got)
	}
	if got := tool.Description(); got != "Get current weather for a location" {
		t.Errorf("Description() = %q", got)
	}
	const want = `{"type":"object","properties":{"location":{"type":"string","description":"City name"}},"required":["location"]}`
	if got := string(tool.Parameters()); got != want {
		t.Errorf("Parameters() = %s, want %s", got, want)
	}
	// Changing one copy must not change the next.
	p := tool.Parameters()
	p[0] = 'X'
	if got := string(tool.Parameters()); got != want {
		t.Errorf("Parameters() after modifying a copy = %s", got)
	}
}

func TestRunPlaces(t *testing.T) {
	_, base := newFake(t)
	tool := newTool(base, 0)
	tests := []struct {
		location string
		want     weather.Result
	}{
		{"Berlin", weather.Result{Temperature: 3.2, FeelsLike: -0.4, Humidity: 81, WindSpeed: 14.8, WindGust: 29.5, Conditions: "Overcast", Location: "Berlin"}},
		{"London", weather.Result{Temperature: 8.4, FeelsLike: 5.9, Humidity: 88, WindSpeed: 18.7, WindGust: 37.1, Conditions: "Light drizzle", Location: "London"}},
		{"Paris", weather.Result{Temperature: 6.1, FeelsLike: 3.8, Humidity: 76, WindSpeed: 11.2, WindGust: 22.3, Conditions: "Partly cloudy", Location: "Paris"}},
		{"Tokyo", weather.Result{Temperature: 9.7, FeelsLike: 7.5, Humidity: 42, WindSpeed: 8.6, WindGust: 18.4, Conditions: "Clear sky", Location: "Tokyo"}},
		{"New York", weather.Result{Temperature: 1.4, FeelsLike: -3.9, Humidity: 64, WindSpeed: 22.3, WindGust: 41, Conditions: "Slight snow fall", Location: "New York"}},
		{"San Francisco", weather.Result{Temperature: 13.6, FeelsLike: 12.9, Humidity: 79, WindSpeed: 16.9, WindGust: 31.3, Conditions: "Foggy", Location: "San Francisco"}},
		{"Sydney", weather.Result{Temperature: 26.8, FeelsLike: 28.1, Humidity: 67, WindSpeed: 19.4, WindGust: 33.8, Conditions: "Thunderstorm", Location: "Sydney"}},
		{"Reykjavik", weather.Result{Temperature: -2.5, FeelsLike: -9.1, Humidity: 72, WindSpeed: 31, WindGust: 52.6, Conditions: "Moderate snow fall", Location: "Reykjavík"}},
		// Case and surrounding space do not matter; the result carries the
		// geocoder's spelling.
		{"  bErLiN ", weather.Result{Temperature: 3.2, FeelsLike: -0.4, Humidity: 81, WindSpeed: 14.8, WindGust: 29.5, Conditions: "Overcast", Location: "Berlin"}},
		{"reykjavík", weather.Result{Temperature: -2.5, FeelsLike: -9.1, Humidity: 72, WindSpeed: 31, WindGust: 52.6, Conditions: "Moderate snow fall", Location: "Reykjavík"}},
	}
	for _, tt := range tests {
		t.Run(tt.location, func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"location": tt.location})
			got, err := run(t, tool, string(args))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got != tt.want {
				t.Errorf("Run = %+v\nwant  %+v", got, tt.want)
			}
		})
	}
}

// TestRunCoversFixtures keeps TestRunPlaces in step with the fake: every
// resolving fixture place is looked up and matches the fixture's values.
func TestRunCoversFixtures(t *testing.T) {
	_, base := newFake(t)
	tool := newTool(base, 0)
	for _, p := range openmeteo.Places() {
		if p.ForecastFails {
			continue
		}
		args, _ := json.Marshal(map[string]string{"location": p.Name})
		got, err := run(t, tool, string(args))
		if err != nil {
			t.Errorf("%s: %v", p.Name, err)
			continue
		}
		want := weather.Result{
			Temperature: p.Weather.Temperature, FeelsLike: p.Weather.ApparentTemperature,
			Humidity: float64(p.Weather.RelativeHumidity), WindSpeed: p.Weather.WindSpeed,
			WindGust: p.Weather.WindGusts, Conditions: weather.Conditions(p.Weather.WeatherCode),
			Location: p.Name,
		}
		if got != want {
			t.Errorf("%s: Run = %+v, want %+v", p.Name, got, want)
		}
		if got.Conditions == "Unknown" {
			t.Errorf("%s: fixture weather code %d has no words", p.Name, p.Weather.WeatherCode)
		}
	}
}

func TestResultJSON(t *testing.T) {
	b, err := json.Marshal(weather.Result{Temperature: 3.2, FeelsLike: -0.4, Humidity: 81, WindSpeed: 14.8, WindGust: 29.5, Conditions: "Overcast", Location: "Berlin"})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"temperature":3.2,"feelsLike":-0.4,"humidity":81,"windSpeed":14.8,"windGust":29.5,"conditions":"Overcast","location":"Berlin"}`
	if string(b) != want {
		t.Errorf("JSON = %s\nwant   %s", b, want)
	}
}

func TestRunNotFound(t *testing.T) {
	fake, base := newFake(t)
	_, err := run(t, newTool(base, 0), `{"location":"Atlantis"}`)
	if err == nil || err.Error() != `no place named "Atlantis" was found` {
		t.Fatalf("error = %v", err)
	}
	if n := fake.Requests(openmeteo.ForecastPath); n != 0 {
		t.Errorf("forecast requests = %d, want 0 after a failed geocoding", n)
	}
}

func TestRunForecastFailure(t *testing.T) {
	fake, base := newFake(t)
	_, err := run(t, newTool(base, 0), `{"location":"Errorville"}`)
	const want = "the forecast service failed: HTTP 500: Internal server error: the forecast model is unavailable"
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v\nwant    %s", err, want)
	}
	if s, f := fake.Requests(openmeteo.SearchPath), fake.Requests(openmeteo.ForecastPath); s != 1 || f != 1 {
		t.Errorf("requests: search %d, forecast %d; want 1 and 1", s, f)
	}
}

func TestRunInvalidArgs(t *testing.T) {
	fake, base := newFake(t)
	tool := newTool(base, 0)
	const (
		required  = `location is required: give a place name such as "Berlin"`
		notObject = `arguments must be a JSON object such as {"location": "Berlin"}`
		notString = `location must be a string such as "Berlin"`
		tooLong   = `location is too long: at most 200 characters`
	)
	tests := []struct {
		name, args, want string
	}{
		{"missing", `{}`, required},
		{"other key only", `{"city":"Berlin"}`, required},
		{"null", `{"location":null}`, required},
		{"number", `{"location":42}`, notString},
		{"object", `{"location":{"name":"Berlin"}}`, notString},
		{"array", `{"location":["Berlin"]}`, notString},
		{"empty", `{"location":""}`, required},
		{"blank", `{"location":" \t\n "}`, required},
		{"too long", `{"location":"` + strings.Repeat("a", 201) + `"}`, tooLong},
		{"too long in characters", `{"location":"` + strings.Repeat("é", 201) + `"}`, tooLong},
		{"string", `"Berlin"`, notObject},
		{"array args", `["Berlin"]`, notObject},
		{"null args", `null`, notObject},
		{"empty args", ``, notObject},
		{"invalid JSON", `{"location":"Berlin"`, notObject},
		{"garbage", `location=Berlin`, notObject},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, tool, tt.args)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error = %v, want %s", err, tt.want)
			}
		})
	}
	if n := fake.Requests(openmeteo.SearchPath); n != 0 {
		t.Errorf("invalid arguments made %d geocoding requests, want 0", n)
	}

	// 200 characters is still accepted (and simply not found).
	_, err := run(t, tool, `{"location":"`+strings.Repeat("é", 200)+`"}`)
	if err == nil || !strings.HasPrefix(err.Error(), "no place named") {
		t.Errorf("200 characters: error = %v, want not found", err)
	}
}

func TestRunInvalidArgsWrapCause(t *testing.T) {
	_, err := run(t, weather.New(weather.Config{}), `{"location":`)
	var syntax *json.SyntaxError
	if !errors.As(err, &syntax) {
		t.Errorf("error %v does not wrap the *json.SyntaxError", err)
	}
}

// recorder records the requests it passes on to next.
type recorder struct {
	next http.Handler
	mu   sync.Mutex
	urls []*url.URL
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.urls = append(r.urls, req.URL)
	r.mu.Unlock()
	r.next.ServeHTTP(w, req)
}

func TestRunQueryParameters(t *testing.T) {
	rec := &recorder{next: openmeteo.New()}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	if _, err := run(t, newTool(srv.URL, 0), `{"location":"New York"}`); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.urls) != 2 {
		t.Fatalf("made %d requests, want 2", len(rec.urls))
	}
	search, forecast := rec.urls[0], rec.urls[1]
	if search.Path != "/v1/search" {
		t.Errorf("geocoding path = %q", search.Path)
	}
	if want := (url.Values{"name": {"New York"}, "count": {"1"}}); search.Query().Encode() != want.Encode() {
		t.Errorf("geocoding query = %v, want %v", search.Query(), want)
	}
	if !strings.Contains(search.RawQuery, "name=New+York") && !strings.Contains(search.RawQuery, "name=New%20York") {
		t.Errorf("geocoding raw query %q does not url-encode the name", search.RawQuery)
	}
	if forecast.Path != "/v1/forecast" {
		t.Errorf("forecast path = %q", forecast.Path)
	}
	want := url.Values{
		"latitude":  {"40.71427"},
		"longitude": {"-74.00597"},
		"current":   {"temperature_2m,apparent_temperature,relative_humidity_2m,wind_speed_10m,wind_gusts_10m,weather_code"},
	}
	if forecast.Query().Encode() != want.Encode() {
		t.Errorf("forecast query = %v\nwant %v", forecast.Query(), want)
	}
}

func TestRunTrailingSlash(t *testing.T) {
	fake, base := newFake(t)
	tool := weather.New(weather.Config{GeocodingURL: base + "/", ForecastURL: base + "//"})
	got, err := run(t, tool, `{"location":"Paris"}`)
	if err != nil {
		t.Fatal(err)
	}
	if got.Location != "Paris" {
		t.Errorf("Location = %q", got.Location)
	}
	if s, f := fake.Requests(openmeteo.SearchPath), fake.Requests(openmeteo.ForecastPath); s != 1 || f != 1 {
		t.Errorf("requests: search %d, forecast %d; want 1 and 1 at the exact paths", s, f)
	}
}

// split serves the geocoding API from the fake and the forecast API from
// forecast, so either service can misbehave alone.
func split(t *testing.T, geocoding, forecast http.Handler) *weather.Tool {
	t.Helper()
	g := httptest.NewServer(geocoding)
	t.Cleanup(g.Close)
	f := httptest.NewServer(forecast)
	t.Cleanup(f.Close)
	return weather.New(weather.Config{GeocodingURL: g.URL, ForecastURL: f.URL, Timeout: 2 * time.Second})
}

func TestRunUpstreamFailures(t *testing.T) {
	fake := openmeteo.New()
	respond := func(status int, contentType, body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", contentType)
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		})
	}
	const html = "text/html"
	const js = "application/json"
	tests := []struct {
		name               string
		geocoding, forecst http.Handler
		want               string
	}{
		{"geocoding not JSON", respond(200, html, "<html>maintenance</html>"), fake,
			"the geocoding service sent a response that is not valid JSON"},
		{"geocoding empty body", respond(200, js, ""), fake,
			"the geocoding service sent a response that is not valid JSON"},
		{"geocoding wrong shape", respond(200, js, `{"results":"Berlin"}`), fake,
			"the geocoding service sent a response of an unexpected shape"},
		{"geocoding array", respond(200, js, `[1,2]`), fake,
			"the geocoding service sent a response of an unexpected shape"},
		{"geocoding empty results", respond(200, js, `{"results":[],"generationtime_ms":0.1}`), fake,
			`no place named "Berlin" was found`},
		{"geocoding no coordinates", respond(200, js, `{"results":[{"name":"Berlin"}]}`), fake,
			`the geocoding service sent no valid coordinates for "Berlin"`},
		{"geocoding bad coordinates", respond(200, js, `{"results":[{"name":"Berlin","latitude":91,"longitude":0}]}`), fake,
			`the geocoding service sent no valid coordinates for "Berlin"`},
		{"geocoding 400 with reason", respond(400, js, `{"error":true,"reason":"Parameter count must be between 1 and 100."}`), fake,
			"the geocoding service failed: HTTP 400: Parameter count must be between 1 and 100."},
		{"geocoding 502 without reason", respond(502, html, "<html>bad gateway</html>"), fake,
			"the geocoding service failed: HTTP 502 Bad Gateway"},
		{"geocoding error with 200", respond(200, js, `{"error":true,"reason":"quota\nexceeded"}`), fake,
			"the geocoding service failed: quota exceeded"},
		{"forecast not JSON", fake, respond(200, "text/plain", "OK"),
			"the forecast service sent a response that is not valid JSON"},
		{"forecast truncated JSON", fake, respond(200, js, `{"current":{"temperature_2m":3.`),
			"the forecast service sent a response that is not valid JSON"},
		{"forecast without current", fake, respond(200, js, `{"latitude":52.52,"longitude":13.41}`),
			"the forecast service sent a response without current weather"},
		{"forecast null current", fake, respond(200, js, `{"current":null}`),
			"the forecast service sent a response without current weather"},
		{"forecast missing value", fake, respond(200, js, `{"current":{"temperature_2m":1,"apparent_temperature":1,"relative_humidity_2m":1,"wind_speed_10m":1,"weather_code":1}}`),
			"the forecast service sent no current wind_gusts_10m"},
		{"forecast string value", fake, respond(200, js, `{"current":{"temperature_2m":"warm"}}`),
			"the forecast service sent a response of an unexpected shape"},
		{"forecast 503 with reason", fake, respond(503, js, `{"error":true,"reason":"Too many requests"}`),
			"the forecast service failed: HTTP 503: Too many requests"},
		{"forecast 500 with a reason that names an address", fake, respond(500, js, `{"error":true,"reason":"upstream 10.1.2.3:8080 refused"}`),
			"the forecast service failed: HTTP 500 Internal Server Error"},
		{"forecast error with 200 that names a path", fake, respond(200, js, `{"error":true,"reason":"cannot open /var/lib/om/grid.om"}`),
			"the forecast service failed"},
		{"forecast error with 200 and no reason", fake, respond(200, js, `{"error":true}`),
			"the forecast service failed: no reason given"},
		{"forecast 404", fake, respond(404, html, "not found"),
			"the forecast service failed: HTTP 404 Not Found"},
		{"forecast huge", fake, respond(200, js, `{"pad":"`+strings.Repeat("x", 1<<20)+`"}`),
			"the forecast service sent a response larger than 1 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, split(t, tt.geocoding, tt.forecst), `{"location":"Berlin"}`)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error = %v\nwant    %s", err, tt.want)
			}
			var syntax *json.SyntaxError
			if strings.HasSuffix(tt.want, "not valid JSON") && !errors.As(err, &syntax) {
				t.Errorf("error %v does not wrap the *json.SyntaxError", err)
			}
		})
	}
}

func TestRunUnknownWeatherCode(t *testing.T) {
	forecast := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"current":{"temperature_2m":1,"apparent_temperature":2,"relative_humidity_2m":3,"wind_speed_10m":4,"wind_gusts_10m":5,"weather_code":2.5}}`))
	})
	got, err := run(t, split(t, openmeteo.New(), forecast), `{"location":"Berlin"}`)
	if err != nil {
		t.Fatal(err)
	}
	want := weather.Result{Temperature: 1, FeelsLike: 2, Humidity: 3, WindSpeed: 4, WindGust: 5, Conditions: "Unknown", Location: "Berlin"}
	if got != want {
		t.Errorf("Run = %+v, want %+v", got, want)
	}
}

func TestRunUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close() // nothing listens there now
	_, err := run(t, newTool(base, time.Second), `{"location":"Berlin"}`)
	if err == nil || err.Error() != "the geocoding service could not be reached" {
		t.Fatalf("error = %v", err)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("error %v does not wrap ECONNREFUSED", err)
	}
}

// hang answers nothing until the client gives up.
func hang(release <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
}

func TestRunTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release) // lets the handlers end before the servers close
	tests := []struct {
		name               string
		geocoding, forecst http.Handler
		want               string
	}{
		{"geocoding", hang(release), openmeteo.New(), "the geocoding service did not answer within 50ms"},
		{"forecast", openmeteo.New(), hang(release), "the forecast service did not answer within 50ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := httptest.NewServer(tt.geocoding)
			defer g.Close()
			f := httptest.NewServer(tt.forecst)
			defer f.Close()
			tool := weather.New(weather.Config{GeocodingURL: g.URL, ForecastURL: f.URL, Timeout: 50 * time.Millisecond})
			start := time.Now()
			_, err := tool.Run(context.Background(), json.RawMessage(`{"location":"Tokyo"}`))
			elapsed := time.Since(start)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error = %v, want %s", err, tt.want)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
			}
			if elapsed > time.Second {
				t.Errorf("Run took %v with a 50ms timeout", elapsed)
			}
		})
	}
}

func TestRunCanceled(t *testing.T) {
	t.Run("before", func(t *testing.T) {
		fake, base := newFake(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := newTool(base, 0).Run(ctx, json.RawMessage(`{"location":"Berlin"}`))
		if !errors.Is(err, context.Canceled) || err.Error() != "the geocoding request was canceled" {
			t.Errorf("error = %v", err)
		}
		if n := fake.Requests(openmeteo.SearchPath); n != 0 {
			t.Errorf("made %d requests with a canceled context", n)
		}
	})
	t.Run("during", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		tool := split(t, openmeteo.New(), hang(release))
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		_, err := tool.Run(ctx, json.RawMessage(`{"location":"Berlin"}`))
		if !errors.Is(err, context.Canceled) || err.Error() != "the forecast request was canceled" {
			t.Errorf("error = %v", err)
		}
		if elapsed := time.Since(start); elapsed > time.Second {
			t.Errorf("Run took %v after cancellation", elapsed)
		}
	})
}

func TestRunConcurrent(t *testing.T) {
	fake, base := newFake(t)
	tool := newTool(base, 0)
	places := []string{"Berlin", "London", "Paris", "Tokyo"}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if _, err := tool.Run(context.Background(), json.RawMessage(`{"location":"`+places[i%len(places)]+`"}`)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := fake.Requests(openmeteo.ForecastPath); n != 20 {
		t.Errorf("forecast requests = %d, want 20", n)
	}
}

func TestDefaults(t *testing.T) {
	// The default base URLs are only observable through the requests they
	// produce; a transport that answers locally shows where they would go.
	var got []string
	client := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		got = append(got, r.URL.Scheme+"://"+r.URL.Host+r.URL.Path)
		deadline, ok := r.Context().Deadline()
		if !ok || time.Until(deadline) > weather.DefaultTimeout {
			t.Errorf("request to %s has no deadline within the default timeout", r.URL)
		}
		body := `{"results":[{"name":"Berlin","latitude":52.52437,"longitude":13.41053}]}`
		if r.URL.Path == "/v1/forecast" {
			body = `{"current":{"temperature_2m":1,"apparent_temperature":2,"relative_humidity_2m":3,"wind_speed_10m":4,"wind_gusts_10m":5,"weather_code":3}}`
		}
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	})}
	if _, err := weather.New(weather.Config{Client: client}).Run(context.Background(), json.RawMessage(`{"location":"Berlin"}`)); err != nil {
		t.Fatal(err)
	}
	want := []string{"https://geocoding-api.open-meteo.com/v1/search", "https://api.open-meteo.com/v1/forecast"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("requests went to %v, want %v", got, want)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestErrorTextsAreClientSafe: the text of every failure goes to the client
// and to the model, so it names no host, address, port, URL, path or Go
// error, while the cause stays reachable for the log.
func TestErrorTextsAreClientSafe(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	serve := func(h http.HandlerFunc) string {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	echo := func(status int, body string) string {
		return serve(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			_, _ = io.WriteString(w, strings.ReplaceAll(body, "URL", "http://127.0.0.1:1"+r.URL.String()))
		})
	}
	hangs := serve(func(w http.ResponseWriter, r *http.Request) { hang(release).ServeHTTP(w, r) })
	cut := serve(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = io.WriteString(w, `{"results":`)
	})
	var urlErr *url.Error
	tests := []struct {
		name   string
		tool   *weather.Tool
		want   string
		cause  func(error) bool
		causes string
		// echo: the cause quotes the upstream's body, which may hold anything.
		echo bool
	}{
		{"connection refused", newTool("http://127.0.0.1:1", time.Second),
			"the geocoding service could not be reached",
			func(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }, "ECONNREFUSED", false},
		{"timeout", newTool(hangs, 50*time.Millisecond),
			"the geocoding service did not answer within 50ms",
			func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }, "context.DeadlineExceeded", false},
		{"client timeout", weather.New(weather.Config{GeocodingURL: hangs, Client: &http.Client{Timeout: 50 * time.Millisecond}}),
			"the geocoding service did not answer in time",
			func(err error) bool { return errors.As(err, &urlErr) && urlErr.Timeout() }, "a *url.Error that timed out", false},
		{"URL without a scheme", newTool("127.0.0.1:1", time.Second),
			"the geocoding service URL is not valid",
			func(err error) bool { return errors.As(err, &urlErr) }, "the *url.Error of the parse", false},
		{"URL of another scheme", newTool("ftp://127.0.0.1:1", time.Second),
			"the geocoding service could not be reached",
			func(err error) bool { return errors.As(err, &urlErr) }, "the *url.Error of the request", false},
		{"HTTP 500 with Open-Meteo's body echoing a URL", newTool(echo(500, `{"error":true,"reason":"GET URL failed: dial tcp 127.0.0.1:1: connect: connection refused"}`), time.Second),
			"the geocoding service failed: HTTP 500 Internal Server Error",
			func(err error) bool { return strings.Contains(err.Error(), "connection refused") }, "the body", true},
		{"HTTP 502 with a page echoing a URL", newTool(echo(502, `<html>proxy error reaching URL</html>`), time.Second),
			"the geocoding service failed: HTTP 502 Bad Gateway",
			func(err error) bool { return strings.Contains(err.Error(), "proxy error") }, "the body", true},
		{"body too large", newTool(echo(200, `{"pad":"`+strings.Repeat("x", 1<<20)+`"}`), time.Second),
			"the geocoding service sent a response larger than 1 MiB",
			func(err error) bool { return strings.Contains(err.Error(), "more than 1048576 bytes") }, "the limit", false},
		{"body cut short", newTool(cut, time.Second),
			"the geocoding service sent a response that was cut short",
			func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }, "io.ErrUnexpectedEOF", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.tool.Run(context.Background(), json.RawMessage(`{"location":"Berlin"}`))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			for _, bad := range []string{"127.0.0.1", ":1", "http://", "ftp://", "dial", "tcp", "/v1/", "Berlin", "lookup"} {
				if strings.Contains(err.Error(), bad) {
					t.Errorf("error %q shows %q", err, bad)
				}
			}
			cause := errors.Unwrap(err)
			if cause == nil || !tc.cause(cause) {
				t.Errorf("errors.Unwrap gives %v, want %s", cause, tc.causes)
			}
			if !tc.echo && strings.Contains(fmt.Sprint(cause), "name=Berlin") {
				t.Errorf("the cause %q repeats the query with the place", cause)
			}
		})
	}
}
