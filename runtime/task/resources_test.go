package task

import (
	"strings"
	"testing"
)

func TestResourcesArithmetic(t *testing.T) {
	r := func(cpu, gpu float64, custom map[string]float64) Resources {
		return Resources{CPU: cpu, GPU: gpu, Custom: custom}
	}
	a := r(2, 1, map[string]float64{"disk": 3})
	b := r(0.5, 2, map[string]float64{"disk": 1, "tpu": 4})
	for _, tc := range []struct {
		name      string
		got, want Resources
	}{
		{"add", a.Add(b), r(2.5, 3, map[string]float64{"disk": 4, "tpu": 4})},
		{"sub keeps negatives", a.Sub(b), r(1.5, -1, map[string]float64{"disk": 2, "tpu": -4})},
		{"min over r's custom keys", a.Min(b), r(0.5, 1, map[string]float64{"disk": 1})},
		{"max over both", a.Max(b), r(2, 2, map[string]float64{"disk": 3, "tpu": 4})},
		{"non-negative drops dust and debts", r(-1, 1e-12, map[string]float64{"disk": -2, "tpu": 1}).NonNegative(), r(0, 0, map[string]float64{"tpu": 1})},
		{"clone", a.Clone(), a},
	} {
		if !tc.got.Equal(tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if c := a.Clone(); true {
		c.Custom["disk"] = 9
		if a.Custom["disk"] != 3 {
			t.Error("Clone shares its Custom map with the original")
		}
	}
	for _, tc := range []struct {
		r    Resources
		zero bool
	}{
		{Resources{}, true},
		{r(1e-12, -3, map[string]float64{"disk": 1e-10}), true},
		{r(0, 0, map[string]float64{"disk": 0.5}), false},
		{r(0, 1, nil), false},
	} {
		if got := tc.r.IsZero(); got != tc.zero {
			t.Errorf("%v.IsZero() = %v, want %v", tc.r, got, tc.zero)
		}
	}
	if r(1, 0, map[string]float64{"x": 1}).Equal(r(1, 0, nil)) {
		t.Error("Equal ignores a custom resource only one side has")
	}
	if !r(1, 0, map[string]float64{"x": 0}).Equal(r(1+1e-12, 0, nil)) {
		t.Error("Equal: a zero custom amount and rounding dust should not matter")
	}
}

func TestResourcesCheck(t *testing.T) {
	for _, c := range []struct {
		r    Resources
		fail string // what the error says; "": none
	}{
		{Resources{}, ""},
		{Resources{CPU: 2, GPU: 1, Custom: map[string]float64{"disk": 1, "zero": 0}}, ""},
		{Resources{CPU: -1}, "negative resources CPU=-1"},
		{Resources{GPU: -0.5}, "negative resources GPU=-0.5"},
		{Resources{Custom: map[string]float64{"disk": -1}}, `custom resource "disk"=-1`},
		{Resources{Custom: map[string]float64{"": 1}}, "names must be non-empty"},
	} {
		err := c.r.Check()
		if (err == nil) != (c.fail == "") || err != nil && !strings.Contains(err.Error(), c.fail) {
			t.Errorf("%v.Check() = %v; want an error saying %q", c.r, err, c.fail)
		}
	}
}
