package rllib

import (
	"strings"
	"testing"
)

type nested struct {
	A int `json:"a"`
}

type testConfig struct {
	LR    float64 `json:"lr"`
	N     int     `json:"n"`
	Model strict  `json:"model"`
	Inner nested  `json:"inner"`
}

// strict rejects unknown keys, as models.ModelOptions does.
type strict struct{ nested }

func (s *strict) UnmarshalJSON(b []byte) error {
	if strings.Contains(string(b), "typo") {
		return &unknownKeyError{"typo"}
	}
	return nil
}

type unknownKeyError struct{ key string }

func (e *unknownKeyError) Error() string { return "unknown key " + e.key }

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		cfg  map[string]any
		want string
	}{
		{map[string]any{"lrr": 1}, `unknown key "lrr"`},
		{map[string]any{"lr": "fast"}, `key "lr" must be a number, got "fast"`},
		{map[string]any{"n": 1.5}, `key "n" must be an integer, got 1.5`},
		{map[string]any{"model": map[string]any{"typo": 1}}, `key "model": unknown key typo`},
		{map[string]any{"inner": map[string]any{"a": "x"}}, `key "inner.a" must be an integer, got string`},
	}
	for _, tc := range tests {
		cfg := testConfig{}
		err := Decode("X", tc.cfg, &cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%v) = %v, want an error containing %s", tc.cfg, err, tc.want)
		}
	}
	cfg := testConfig{LR: 1}
	if err := Decode("X", map[string]any{"n": 3}, &cfg); err != nil || cfg.N != 3 || cfg.LR != 1 {
		t.Errorf("Decode kept %+v, %v; want n set and lr kept", cfg, err)
	}
}
