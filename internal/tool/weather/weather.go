// Package weather is the agent's weatherTool: the current weather for a place
// name, looked up in Open-Meteo's geocoding API (name to coordinates) and then
// its forecast API (coordinates to current conditions). Neither API needs a
// key.
package weather

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Defaults used for the zero values of Config.
const (
	DefaultGeocodingURL = "https://geocoding-api.open-meteo.com"
	DefaultForecastURL  = "https://api.open-meteo.com"
	DefaultTimeout      = 10 * time.Second
)

// MaxLocationLength is the longest location, in characters, the tool accepts:
// no real place name comes close, and it keeps a runaway model from sending
// a page of text upstream.
const MaxLocationLength = 200

// maxBodyBytes caps what is read from an upstream response; a real answer is
// a few hundred bytes, so anything near this is not one.
const maxBodyBytes = 1 << 20

// currentVariables are the forecast variables the result is built from, in
// the order they are asked for.
const currentVariables = "temperature_2m,apparent_temperature,relative_humidity_2m,wind_speed_10m,wind_gusts_10m,weather_code"

// parameters is the JSON Schema of the tool's arguments.
const parameters = `{"type":"object","properties":{"location":{"type":"string","description":"City name"}},"required":["location"]}`

// The two upstream services, named as they appear in error messages.
const (
	geocodingService = "geocoding"
	forecastService  = "forecast"
)

// Config configures a Tool. Zero values select the defaults.
type Config struct {
	// GeocodingURL is the base URL of the geocoding API; the tool appends
	// /v1/search. Empty means DefaultGeocodingURL.
	GeocodingURL string
	// ForecastURL is the base URL of the forecast API; the tool appends
	// /v1/forecast. Empty means DefaultForecastURL.
	ForecastURL string
	// Timeout bounds each upstream request. Zero or negative means
	// DefaultTimeout.
	Timeout time.Duration
	// Client sends the requests. Nil means a client of the tool's own.
	Client *http.Client
}

// Tool is the weatherTool. It is safe for concurrent use.
type Tool struct {
	geocodingURL string
	forecastURL  string
	timeout      time.Duration
	client       *http.Client
}

// New returns a Tool configured by cfg.
func New(cfg Config) *Tool {
	t := &Tool{
		geocodingURL: baseURL(cfg.GeocodingURL, DefaultGeocodingURL),
		forecastURL:  baseURL(cfg.ForecastURL, DefaultForecastURL),
		timeout:      cfg.Timeout,
		client:       cfg.Client,
	}
	if t.timeout <= 0 {
		t.timeout = DefaultTimeout
	}
	if t.client == nil {
		t.client = &http.Client{}
	}
	return t
}

// baseURL trims the trailing slashes a configured base may carry, so that
// appending the API path never yields "//v1".
func baseURL(configured, fallback string) string {
	if strings.TrimSpace(configured) == "" {
		configured = fallback
	}
	return strings.TrimRight(strings.TrimSpace(configured), "/")
}

// Result is the tool's answer: the current weather at the geocoded place.
// Temperatures are in °C, humidity in %, wind speeds in km/h (Open-Meteo's
// defaults).
type Result struct {
	Temperature float64 `json:"temperature"`
	FeelsLike   float64 `json:"feelsLike"`
	Humidity    float64 `json:"humidity"`
	WindSpeed   float64 `json:"windSpeed"`
	WindGust    float64 `json:"windGust"`
	Conditions  string  `json:"conditions"`
	// Location is the name of the place the geocoder chose, which may be
	// spelled differently from the one asked for.
	Location string `json:"location"`
}

// Name is the name the model calls the tool by.
func (t *Tool) Name() string { return "weatherTool" }

// Description tells the model what the tool is for.
func (t *Tool) Description() string { return "Get current weather for a location" }

// Parameters is the JSON Schema of the tool's arguments. Each call returns a
// fresh copy, so a caller cannot change what the next one sees.
func (t *Tool) Parameters() json.RawMessage { return json.RawMessage(parameters) }

// Run looks up the current weather for args {"location": "<place name>"} and
// returns a Result. Errors carry a short human cause, without the tool's
// name, fit to show the model.
func (t *Tool) Run(ctx context.Context, args json.RawMessage) (any, error) {
	location, err := parseArgs(args)
	if err != nil {
		return nil, err
	}
	place, err := t.geocode(ctx, location)
	if err != nil {
		return nil, err
	}
	result, err := t.forecast(ctx, place)
	if err != nil {
		// A zero Result in the interface would be non-nil beside the error.
		return nil, err
	}
	return result, nil
}

// parseArgs validates the model's arguments and returns the trimmed location.
func parseArgs(args json.RawMessage) (string, error) {
	const notObject = `arguments must be a JSON object such as {"location": "Berlin"}`
	var fields map[string]json.RawMessage
	// A JSON null decodes into a nil map without error; it is no object either.
	if err := json.Unmarshal(args, &fields); err != nil {
		return "", &causeError{msg: notObject, err: err}
	}
	if fields == nil {
		return "", errors.New(notObject)
	}
	raw, ok := fields["location"]
	if !ok || string(raw) == "null" {
		return "", errors.New(`location is required: give a place name such as "Berlin"`)
	}
	var location string
	if err := json.Unmarshal(raw, &location); err != nil {
		return "", &causeError{msg: `location must be a string such as "Berlin"`, err: err}
	}
	location = strings.TrimSpace(location)
	if location == "" {
		return "", errors.New(`location is required: give a place name such as "Berlin"`)
	}
	if utf8.RuneCountInString(location) > MaxLocationLength {
		return "", fmt.Errorf("location is too long: at most %d characters", MaxLocationLength)
	}
	return location, nil
}

// place is a geocoded location.
type place struct {
	name      string
	latitude  float64
	longitude float64
}

// upstreamError is the error body Open-Meteo sends:
// {"error":true,"reason":"..."}.
type upstreamError struct {
	Error  bool   `json:"error"`
	Reason string `json:"reason"`
}

type geocodingResponse struct {
	upstreamError
	Results []struct {
		Name      string   `json:"name"`
		Latitude  *float64 `json:"latitude"`
		Longitude *float64 `json:"longitude"`
	} `json:"results"`
}

// geocode resolves location to the geocoder's best match.
func (t *Tool) geocode(ctx context.Context, location string) (place, error) {
	q := url.Values{"name": {location}, "count": {"1"}}
	var resp geocodingResponse
	if err := t.getJSON(ctx, geocodingService, t.geocodingURL+"/v1/search?"+q.Encode(), &resp); err != nil {
		return place{}, err
	}
	if resp.Error {
		return place{}, failedError(geocodingService, resp.Reason)
	}
	if len(resp.Results) == 0 {
		return place{}, fmt.Errorf("no place named %q was found", location)
	}
	r := resp.Results[0]
	if r.Latitude == nil || r.Longitude == nil ||
		math.Abs(*r.Latitude) > 90 || math.Abs(*r.Longitude) > 180 {
		return place{}, fmt.Errorf("the geocoding service sent no valid coordinates for %q", location)
	}
	name := strings.TrimSpace(r.Name)
	if name == "" {
		name = location
	}
	return place{name: name, latitude: *r.Latitude, longitude: *r.Longitude}, nil
}

type forecastResponse struct {
	upstreamError
	Current *struct {
		Temperature         *float64 `json:"temperature_2m"`
		ApparentTemperature *float64 `json:"apparent_temperature"`
		RelativeHumidity    *float64 `json:"relative_humidity_2m"`
		WindSpeed           *float64 `json:"wind_speed_10m"`
		WindGusts           *float64 `json:"wind_gusts_10m"`
		WeatherCode         *float64 `json:"weather_code"`
	} `json:"current"`
}

// forecast fetches the current weather at p.
func (t *Tool) forecast(ctx context.Context, p place) (Result, error) {
	q := url.Values{
		"latitude":  {strconv.FormatFloat(p.latitude, 'f', -1, 64)},
		"longitude": {strconv.FormatFloat(p.longitude, 'f', -1, 64)},
		"current":   {currentVariables},
	}
	var resp forecastResponse
	if err := t.getJSON(ctx, forecastService, t.forecastURL+"/v1/forecast?"+q.Encode(), &resp); err != nil {
		return Result{}, err
	}
	if resp.Error {
		return Result{}, failedError(forecastService, resp.Reason)
	}
	c := resp.Current
	if c == nil {
		return Result{}, errors.New("the forecast service sent a response without current weather")
	}
	// A missing value is reported rather than shown as 0, which the model
	// would pass on as a real reading.
	values := []struct {
		name string
		v    *float64
	}{
		{"temperature_2m", c.Temperature},
		{"apparent_temperature", c.ApparentTemperature},
		{"relative_humidity_2m", c.RelativeHumidity},
		{"wind_speed_10m", c.WindSpeed},
		{"wind_gusts_10m", c.WindGusts},
		{"weather_code", c.WeatherCode},
	}
	for _, v := range values {
		if v.v == nil {
			return Result{}, fmt.Errorf("the forecast service sent no current %s", v.name)
		}
	}
	return Result{
		Temperature: *c.Temperature,
		FeelsLike:   *c.ApparentTemperature,
		Humidity:    *c.RelativeHumidity,
		WindSpeed:   *c.WindSpeed,
		WindGust:    *c.WindGusts,
		Conditions:  conditionsOf(*c.WeatherCode),
		Location:    p.name,
	}, nil
}

// conditionsOf maps a decoded weather_code; a fractional or huge number is
// no WMO code.
func conditionsOf(code float64) string {
	if code != math.Trunc(code) || math.Abs(code) > 1000 {
		return Conditions(-1)
	}
	return Conditions(int(code))
}

// getJSON sends GET u with the per-request timeout and decodes a 2xx JSON
// answer into dst. service names the upstream in errors, whose text never
// holds the URL, an address or a Go error: the cause stays reachable with
// errors.Unwrap, for the log.
func (t *Tool) getJSON(ctx context.Context, service, u string, dst any) error {
	reqCtx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, u, nil)
	if err != nil {
		return &causeError{msg: fmt.Sprintf("the %s service URL is not valid", service), err: withoutQuery(err)}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := t.client.Do(req)
	if err != nil {
		return t.transportError(ctx, reqCtx, service, "could not be reached", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	if err != nil {
		return t.transportError(ctx, reqCtx, service, "sent a response that was cut short", err)
	}
	if len(body) > maxBodyBytes {
		return &causeError{msg: fmt.Sprintf("the %s service sent a response larger than 1 MiB", service),
			err: fmt.Errorf("HTTP %d: the body has more than %d bytes", resp.StatusCode, maxBodyBytes)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return statusError(service, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, dst); err != nil {
		// Unmarshal checks the syntax of the whole body before it decodes
		// anything, so a syntax error means the body is not JSON at all.
		what := "a response of an unexpected shape"
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			what = "a response that is not valid JSON"
		}
		return &causeError{msg: fmt.Sprintf("the %s service sent %s", service, what), err: err}
	}
	return nil
}

// transportError explains a failed exchange, telling the caller's
// cancellation apart from the tool's own timeout: only the latter is the
// upstream's fault.
func (t *Tool) transportError(ctx, reqCtx context.Context, service, what string, err error) error {
	err = withoutQuery(err)
	switch {
	case ctx.Err() != nil:
		return &causeError{msg: fmt.Sprintf("the %s request was canceled", service), err: fmt.Errorf("%w: %w", ctx.Err(), err)}
	case errors.Is(reqCtx.Err(), context.DeadlineExceeded):
		return &causeError{msg: fmt.Sprintf("the %s service did not answer within %s", service, t.timeout), err: err}
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue.Timeout() {
		return &causeError{msg: fmt.Sprintf("the %s service did not answer in time", service), err: err}
	}
	return &causeError{msg: fmt.Sprintf("the %s service %s", service, what), err: err}
}

// withoutQuery drops the query from the URL a *url.Error repeats: it holds
// the place name or the coordinates asked for, which the log does not need.
func withoutQuery(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	base, _, found := strings.Cut(ue.URL, "?")
	if !found {
		return err
	}
	return &url.Error{Op: ue.Op, URL: base, Err: ue.Err}
}

// statusError explains a non-2xx answer, quoting Open-Meteo's reason when the
// body is its error shape and the reason can be shown.
func statusError(service string, status int, body []byte) error {
	code := strings.TrimSpace("HTTP " + strconv.Itoa(status) + " " + http.StatusText(status))
	cause := fmt.Errorf("%s: %s", code, clean(string(body)))
	var e upstreamError
	if json.Unmarshal(body, &e) == nil {
		if reason := shown(e.Reason); reason != "" {
			return &causeError{msg: fmt.Sprintf("the %s service failed: HTTP %d: %s", service, status, reason), err: cause}
		}
	}
	return &causeError{msg: fmt.Sprintf("the %s service failed: %s", service, code), err: cause}
}

// failedError explains an error body sent with a 2xx status.
func failedError(service, reason string) error {
	msg := fmt.Sprintf("the %s service failed: no reason given", service)
	if clean(reason) != "" {
		msg = fmt.Sprintf("the %s service failed", service)
	}
	if r := shown(reason); r != "" {
		msg = fmt.Sprintf("the %s service failed: %s", service, r)
	}
	return &causeError{msg: msg, err: fmt.Errorf("error body with reason %q", clean(reason))}
}

// unshowable matches what an error message must not repeat from an upstream's
// text, since it goes to the client and to the model: a URL, an IP address,
// a host and port, a file path, a Go network error.
var unshowable = regexp.MustCompile(`://|\b\d{1,3}(\.\d{1,3}){3}\b|\[[0-9A-Fa-f:.%]*:[0-9A-Fa-f:.%]*\]|[A-Za-z0-9.\]-]:\d{1,5}\b|` +
	`(^|[\s"'(=])(/|[A-Za-z]:\\)[A-Za-z0-9._~-]|\b(dial|read|write) (tcp|udp|unix)\b|\blookup \S|\bconnect: `)

// shown is an upstream reason as an error message may quote it, cleaned;
// "" when there is none or it repeats an address, a path or a Go error.
func shown(reason string) string {
	reason = clean(reason)
	if unshowable.MatchString(reason) {
		return ""
	}
	return reason
}

// clean makes an upstream reason fit for one line of an error message: the
// text is not ours, so control characters go and the length is capped.
func clean(s string) string {
	const maxRunes = 200
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}), " ")
	if utf8.RuneCountInString(s) > maxRunes {
		s = string([]rune(s)[:maxRunes]) + "…"
	}
	return s
}

// causeError is an error whose message is written for the model while the
// underlying error stays reachable through errors.Is and errors.As; the
// cause's own text (Go type names, parser offsets) would only confuse it.
type causeError struct {
	msg string
	err error
}

func (e *causeError) Error() string { return e.msg }
func (e *causeError) Unwrap() error { return e.err }
