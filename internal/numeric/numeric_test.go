package numeric

import (
	"encoding/json"
	"testing"
)

func TestFloat(t *testing.T) {
	tests := []struct {
		in   any
		want float64
		ok   bool
	}{
		{2.5, 2.5, true},
		{float32(0.5), 0.5, true},
		{int(-3), -3, true},
		{int64(1 << 40), 1 << 40, true},
		{int32(7), 7, true},
		{int8(-1), -1, true},
		{uint(4), 4, true},
		{uint64(9), 9, true},
		{uint8(255), 255, true},
		{json.Number("1e3"), 1000, true},
		{json.Number("abc"), 0, false},
		{true, 0, false},
		{"12", 0, false},
		{nil, 0, false},
	}
	for _, tc := range tests {
		got, ok := Float(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Float(%#v) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
