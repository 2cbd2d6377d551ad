package weather_test

import (
	"testing"

	"github.com/companionhq/companion/internal/tool/weather"
)

func TestConditions(t *testing.T) {
	tests := []struct {
		code int
		want string
	}{
		{0, "Clear sky"},
		{1, "Mainly clear"},
		{2, "Partly cloudy"},
		{3, "Overcast"},
		{45, "Foggy"},
		{48, "Depositing rime fog"},
		{51, "Light drizzle"},
		{53, "Moderate drizzle"},
		{55, "Dense drizzle"},
		{56, "Light freezing drizzle"},
		{57, "Dense freezing drizzle"},
		{61, "Slight rain"},
		{63, "Moderate rain"},
		{65, "Heavy rain"},
		{66, "Light freezing rain"},
		{67, "Heavy freezing rain"},
		{71, "Slight snow fall"},
		{73, "Moderate snow fall"},
		{75, "Heavy snow fall"},
		{77, "Snow grains"},
		{80, "Slight rain showers"},
		{81, "Moderate rain showers"},
		{82, "Violent rain showers"},
		{85, "Slight snow showers"},
		{86, "Heavy snow showers"},
		{95, "Thunderstorm"},
		{96, "Thunderstorm with slight hail"},
		{99, "Thunderstorm with heavy hail"},
		{-1, "Unknown"},
		{4, "Unknown"},
		{44, "Unknown"},
		{50, "Unknown"},
		{97, "Unknown"},
		{100, "Unknown"},
		{1 << 30, "Unknown"},
	}
	for _, tt := range tests {
		if got := weather.Conditions(tt.code); got != tt.want {
			t.Errorf("Conditions(%d) = %q, want %q", tt.code, got, tt.want)
		}
	}

	// Exactly the 28 codes of the table have words.
	known := 0
	for code := -10; code <= 200; code++ {
		if weather.Conditions(code) != "Unknown" {
			known++
		}
	}
	if known != 28 {
		t.Errorf("%d codes have words, want 28", known)
	}
}
