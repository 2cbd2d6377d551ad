// Package openmeteo is a deterministic fake of Open-Meteo's geocoding API
// (GET /v1/search) and forecast API (GET /v1/forecast), speaking their JSON
// wire format. One Server answers both, so a client's two base URLs can point
// at the same address.
//
// The fixture places are in Places. Any other name geocodes to nothing
// (NotFoundPlace, "Atlantis", is the documented example). FailingPlace,
// "Errorville", geocodes but its forecast answers HTTP 500. A forecast for
// coordinates that match no fixture is derived from the coordinates, so the
// fake never fails unexpectedly. The same request always gets a
// byte-identical response.
package openmeteo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Paths the fake serves.
const (
	SearchPath   = "/v1/search"
	ForecastPath = "/v1/forecast"
)

// Fixed values where the real API reports measurements of itself or of the
// clock; fixed so responses are byte-identical.
const (
	searchGenerationTimeMS   = 0.5
	notFoundGenerationTimeMS = 0.3
	forecastGenerationTimeMS = 0.05
	currentTime              = "2026-01-15T12:00"
	currentInterval          = 900
)

// coordinateTolerance is how close, in degrees on each axis, forecast
// coordinates must be to a fixture's to be its forecast.
const coordinateTolerance = 0.01

// unitOf returns the unit of a current-weather variable the fake knows, as
// the real API reports it; ok is false for any other variable.
func unitOf(variable string) (unit string, ok bool) {
	switch variable {
	case "temperature_2m", "apparent_temperature":
		return "°C", true
	case "relative_humidity_2m":
		return "%", true
	case "wind_speed_10m", "wind_gusts_10m":
		return "km/h", true
	case "weather_code":
		return "wmo code", true
	}
	return "", false
}

// Server is the fake. It is an http.Handler and safe for concurrent use.
type Server struct {
	places []Place

	mu       sync.Mutex
	requests map[string]int
}

// New returns a Server with the fixture places of Places.
func New() *Server {
	return &Server{places: Places(), requests: map[string]int{}}
}

// Requests reports how many requests, of any method and outcome, have been
// made for path (such as SearchPath or ForecastPath).
func (s *Server) Requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[path]
}

// ServeHTTP answers GET /v1/search and GET /v1/forecast.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests[r.URL.Path]++
	s.mu.Unlock()

	var serve func(http.ResponseWriter, *http.Request)
	switch r.URL.Path {
	case SearchPath:
		serve = s.search
	case ForecastPath:
		serve = s.forecast
	default:
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, http.StatusMethodNotAllowed, "Method "+r.Method+" is not allowed")
		return
	}
	serve(w, r)
}

// searchResult is one geocoding result, fields in the real API's order.
type searchResult struct {
	ID          int     `json:"id"`
	Name        string  `json:"name"`
	Latitude    float64 `json:"latitude"`
	Longitude   float64 `json:"longitude"`
	Elevation   decimal `json:"elevation"`
	FeatureCode string  `json:"feature_code"`
	CountryCode string  `json:"country_code"`
	Timezone    string  `json:"timezone"`
	Population  int     `json:"population,omitempty"`
	Country     string  `json:"country"`
	Admin1      string  `json:"admin1,omitempty"`
}

type searchResponse struct {
	Results          []searchResult `json:"results,omitempty"`
	GenerationTimeMS float64        `json:"generationtime_ms"`
}

// search is the geocoding API. It matches the whole name, ignoring case and
// surrounding space, and returns at most one result.
func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	name, ok := q["name"]
	if !ok || strings.TrimSpace(name[0]) == "" {
		writeError(w, http.StatusBadRequest, "Value of type 'String' required for key 'name'.")
		return
	}
	if c := q.Get("count"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 || n > 100 {
			writeError(w, http.StatusBadRequest, "Parameter count must be between 1 and 100.")
			return
		}
	}
	p, ok := s.byName(name[0])
	if !ok {
		writeJSON(w, http.StatusOK, searchResponse{GenerationTimeMS: notFoundGenerationTimeMS})
		return
	}
	writeJSON(w, http.StatusOK, searchResponse{
		Results: []searchResult{{
			ID: p.ID, Name: p.Name, Latitude: p.Latitude, Longitude: p.Longitude,
			Elevation: decimal(p.Elevation), FeatureCode: p.FeatureCode, CountryCode: p.CountryCode,
			Timezone: p.Timezone, Population: p.Population, Country: p.Country, Admin1: p.Admin1,
		}},
		GenerationTimeMS: searchGenerationTimeMS,
	})
}

func (s *Server) byName(name string) (Place, bool) {
	name = strings.TrimSpace(name)
	for _, p := range s.places {
		if strings.EqualFold(p.Name, name) {
			return p, true
		}
		for _, a := range p.Aliases {
			if strings.EqualFold(a, name) {
				return p, true
			}
		}
	}
	return Place{}, false
}

func (s *Server) byCoordinates(lat, lon float64) (Place, bool) {
	for _, p := range s.places {
		if math.Abs(p.Latitude-lat) < coordinateTolerance && math.Abs(p.Longitude-lon) < coordinateTolerance {
			return p, true
		}
	}
	return Place{}, false
}

// forecastResponse is the forecast API's body, fields in the real order.
type forecastResponse struct {
	Latitude             float64 `json:"latitude"`
	Longitude            float64 `json:"longitude"`
	GenerationTimeMS     float64 `json:"generationtime_ms"`
	UTCOffsetSeconds     int     `json:"utc_offset_seconds"`
	Timezone             string  `json:"timezone"`
	TimezoneAbbreviation string  `json:"timezone_abbreviation"`
	Elevation            decimal `json:"elevation"`
	CurrentUnits         object  `json:"current_units"`
	Current              object  `json:"current"`
}

// forecast is the forecast API for one location and the current block only.
func (s *Server) forecast(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	lat, ok := coordinate(w, q, "latitude", 90)
	if !ok {
		return
	}
	lon, ok := coordinate(w, q, "longitude", 180)
	if !ok {
		return
	}
	current := strings.TrimSpace(q.Get("current"))
	if current == "" {
		writeError(w, http.StatusBadRequest, "Value of type 'String' required for key 'current'.")
		return
	}
	units := object{{"time", "iso8601"}, {"interval", "seconds"}}
	var vars []string
	for _, v := range strings.Split(current, ",") {
		v = strings.TrimSpace(v)
		unit, ok := unitOf(v)
		if !ok {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("Cannot initialize ForecastVariable from invalid String value %s for key current", v))
			return
		}
		if slices.Contains(vars, v) {
			continue // asked twice, reported once
		}
		vars = append(vars, v)
		units = append(units, member{v, unit})
	}

	p, ok := s.byCoordinates(lat, lon)
	if !ok {
		p = derived(lat, lon)
	}
	if p.ForecastFails {
		writeError(w, http.StatusInternalServerError, FailingReason)
		return
	}

	values := object{{"time", currentTime}, {"interval", currentInterval}}
	for _, v := range vars {
		values = append(values, member{v, p.Weather.value(v)})
	}
	// The real API snaps coordinates to its grid; rounding stands in for that.
	writeJSON(w, http.StatusOK, forecastResponse{
		Latitude:             round(lat, 2),
		Longitude:            round(lon, 2),
		GenerationTimeMS:     forecastGenerationTimeMS,
		UTCOffsetSeconds:     0,
		Timezone:             "GMT",
		TimezoneAbbreviation: "GMT",
		Elevation:            decimal(p.Elevation),
		CurrentUnits:         units,
		Current:              values,
	})
}

// coordinate parses query parameter key, writing the real API's 400 when it
// is missing, not a number or out of range.
func coordinate(w http.ResponseWriter, q map[string][]string, key string, limit float64) (float64, bool) {
	vs, ok := q[key]
	if !ok || vs[0] == "" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Value of type 'Float' required for key '%s'.", key))
		return 0, false
	}
	f, err := strconv.ParseFloat(vs[0], 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Cannot initialize Float from invalid String value %s for key %s", vs[0], key))
		return 0, false
	}
	if math.Abs(f) > limit {
		name := strings.ToUpper(key[:1]) + key[1:]
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%s must be in range of -%g to %g°. Given: %s.", name, limit, limit, strconv.FormatFloat(f, 'f', 1, 64)))
		return 0, false
	}
	return f, true
}

// value returns the reading of forecast variable v, typed as the real API
// writes it: humidity and weather code as integers, the rest with one
// decimal.
func (wx Weather) value(v string) any {
	switch v {
	case "temperature_2m":
		return decimal(wx.Temperature)
	case "apparent_temperature":
		return decimal(wx.ApparentTemperature)
	case "relative_humidity_2m":
		return wx.RelativeHumidity
	case "wind_speed_10m":
		return decimal(wx.WindSpeed)
	case "wind_gusts_10m":
		return decimal(wx.WindGusts)
	case "weather_code":
		return wx.WeatherCode
	}
	return nil
}

// derived makes up a place at lat, lon whose weather is a function of the
// coordinates (to two decimals), so any location gets a stable forecast.
func derived(lat, lon float64) Place {
	h := fnv.New64a()
	fmt.Fprintf(h, "%.2f,%.2f", lat, lon)
	x := h.Sum64()
	next := func(n uint64) uint64 {
		v := x % n
		x /= n
		return v
	}
	// The weather codes a derived forecast picks from.
	codes := []int{0, 1, 2, 3, 45, 51, 61, 63, 71, 80, 95}
	temp := round(-20+float64(next(500))/10, 1)
	wind := round(float64(next(400))/10, 1)
	return Place{
		Latitude:  lat,
		Longitude: lon,
		Elevation: float64(next(1000)),
		Weather: Weather{
			Temperature:         temp,
			ApparentTemperature: round(temp-float64(next(60))/10, 1),
			RelativeHumidity:    20 + int(next(80)),
			WindSpeed:           wind,
			WindGusts:           round(wind+float64(next(250))/10, 1),
			WeatherCode:         codes[next(uint64(len(codes)))],
		},
	}
}

func round(f float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(f*p) / p
}

// errorResponse is the real API's error body.
type errorResponse struct {
	Error  bool   `json:"error"`
	Reason string `json:"reason"`
}

func writeError(w http.ResponseWriter, status int, reason string) {
	writeJSON(w, status, errorResponse{Error: true, Reason: reason})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Only the fake's own types are marshalled; this is a bug here.
		panic(fmt.Sprintf("openmeteo fake: marshal response: %v", err))
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// decimal is a number written with one decimal, as the real API writes
// measurements (74.0, not 74).
type decimal float64

func (d decimal) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, float64(d), 'f', 1, 64), nil
}

// member is one key and value of an object.
type member struct {
	key   string
	value any
}

// object is a JSON object that keeps its keys in order, because the current
// block lists the variables in the order they were asked for.
type object []member

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
