package openmeteo

// The fake's special place names.
const (
	// NotFoundPlace is the documented example of a name that geocodes to
	// nothing; any name not in Places does the same.
	NotFoundPlace = "Atlantis"
	// FailingPlace geocodes, but the forecast for its coordinates answers
	// HTTP 500 with FailingReason.
	FailingPlace = "Errorville"
	// FailingReason is the reason of the forecast error for FailingPlace.
	FailingReason = "Internal server error: the forecast model is unavailable"
)

// Place is one fixture: what the geocoding API returns for it and the
// current weather the forecast API reports at its coordinates.
type Place struct {
	ID          int
	Name        string
	Latitude    float64
	Longitude   float64
	Elevation   float64
	FeatureCode string
	CountryCode string
	Country     string
	Admin1      string
	Timezone    string
	Population  int
	// Aliases are further names that find the place, such as the plain
	// ASCII spelling of a name with accents.
	Aliases []string
	// ForecastFails makes the forecast for the place answer HTTP 500.
	ForecastFails bool
	Weather       Weather
}

// Weather is the current weather the fake reports, in Open-Meteo's default
// units.
type Weather struct {
	Temperature         float64 // °C
	ApparentTemperature float64 // °C
	RelativeHumidity    int     // %
	WindSpeed           float64 // km/h
	WindGusts           float64 // km/h
	WeatherCode         int     // WMO code
}

// Places returns the fixture places: the resolving ones first, then
// FailingPlace. Each call builds a fresh slice, so callers may modify it.
//
// Coordinates, ids and metadata are GeoNames' (what Open-Meteo returns);
// the weather is invented, with distinct values and varied codes per place.
func Places() []Place {
	return []Place{
		{
			ID: 2950159, Name: "Berlin", Latitude: 52.52437, Longitude: 13.41053, Elevation: 74,
			FeatureCode: "PPLC", CountryCode: "DE", Country: "Germany", Admin1: "Land Berlin",
			Timezone: "Europe/Berlin", Population: 3426354,
			Weather: Weather{Temperature: 3.2, ApparentTemperature: -0.4, RelativeHumidity: 81, WindSpeed: 14.8, WindGusts: 29.5, WeatherCode: 3},
		},
		{
			ID: 2643743, Name: "London", Latitude: 51.50853, Longitude: -0.12574, Elevation: 25,
			FeatureCode: "PPLC", CountryCode: "GB", Country: "United Kingdom", Admin1: "England",
			Timezone: "Europe/London", Population: 8961989,
			Weather: Weather{Temperature: 8.4, ApparentTemperature: 5.9, RelativeHumidity: 88, WindSpeed: 18.7, WindGusts: 37.1, WeatherCode: 51},
		},
		{
			ID: 2988507, Name: "Paris", Latitude: 48.85341, Longitude: 2.3488, Elevation: 42,
			FeatureCode: "PPLC", CountryCode: "FR", Country: "France", Admin1: "Île-de-France",
			Timezone: "Europe/Paris", Population: 2138551,
			Weather: Weather{Temperature: 6.1, ApparentTemperature: 3.8, RelativeHumidity: 76, WindSpeed: 11.2, WindGusts: 22.3, WeatherCode: 2},
		},
		{
			ID: 1850147, Name: "Tokyo", Latitude: 35.6895, Longitude: 139.69171, Elevation: 44,
			FeatureCode: "PPLC", CountryCode: "JP", Country: "Japan", Admin1: "Tokyo",
			Timezone: "Asia/Tokyo", Population: 8336599,
			Weather: Weather{Temperature: 9.7, ApparentTemperature: 7.5, RelativeHumidity: 42, WindSpeed: 8.6, WindGusts: 18.4, WeatherCode: 0},
		},
		{
			ID: 5128581, Name: "New York", Latitude: 40.71427, Longitude: -74.00597, Elevation: 10,
			FeatureCode: "PPL", CountryCode: "US", Country: "United States", Admin1: "New York",
			Timezone: "America/New_York", Population: 8804190,
			Weather: Weather{Temperature: 1.4, ApparentTemperature: -3.9, RelativeHumidity: 64, WindSpeed: 22.3, WindGusts: 41.0, WeatherCode: 71},
		},
		{
			ID: 5391959, Name: "San Francisco", Latitude: 37.77493, Longitude: -122.41942, Elevation: 16,
			FeatureCode: "PPLA2", CountryCode: "US", Country: "United States", Admin1: "California",
			Timezone: "America/Los_Angeles", Population: 864816,
			Weather: Weather{Temperature: 13.6, ApparentTemperature: 12.9, RelativeHumidity: 79, WindSpeed: 16.9, WindGusts: 31.3, WeatherCode: 45},
		},
		{
			ID: 2147714, Name: "Sydney", Latitude: -33.86785, Longitude: 151.20732, Elevation: 58,
			FeatureCode: "PPLA", CountryCode: "AU", Country: "Australia", Admin1: "New South Wales",
			Timezone: "Australia/Sydney", Population: 4627345,
			Weather: Weather{Temperature: 26.8, ApparentTemperature: 28.1, RelativeHumidity: 67, WindSpeed: 19.4, WindGusts: 33.8, WeatherCode: 95},
		},
		{
			ID: 3413829, Name: "Reykjavík", Aliases: []string{"Reykjavik"}, Latitude: 64.13548, Longitude: -21.89541, Elevation: 45,
			FeatureCode: "PPLC", CountryCode: "IS", Country: "Iceland", Admin1: "Capital Region",
			Timezone: "Atlantic/Reykjavik", Population: 118918,
			Weather: Weather{Temperature: -2.5, ApparentTemperature: -9.1, RelativeHumidity: 72, WindSpeed: 31.0, WindGusts: 52.6, WeatherCode: 73},
		},
		{
			// Invented, in the open Atlantic, far from every other fixture.
			ID: 9999001, Name: FailingPlace, Latitude: 12.3456, Longitude: -45.6789, Elevation: 0,
			FeatureCode: "PPL", CountryCode: "XX", Country: "Nowhere", Timezone: "GMT",
			ForecastFails: true,
		},
	}
}
