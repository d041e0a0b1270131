package codec

import (
	"bytes"
	"math"
	"testing"
)

// The integers and booleans Marshal encodes itself come out byte for byte
// as the CBOR encoder writes them, at every head length and sign, and
// decode back.
func TestMarshalIntSameAsEncoder(t *testing.T) {
	type myInt int // a named type goes through the encoder
	cases := []any{
		0, 1, 23, 24, 255, 256, 65535, 65536, 1<<32 - 1, 1 << 32, math.MaxInt, math.MinInt,
		-1, -24, -25, -256, -257, -65536, -65537, -1 << 32, -1<<32 - 1,
		int64(-9), int64(math.MaxInt64), int32(math.MinInt32), int32(100000),
		uint(7), uint32(math.MaxUint32), uint64(math.MaxUint64), uint64(1000),
		true, false, myInt(5),
	}
	for _, v := range cases {
		got, err := Marshal(v)
		if err != nil {
			t.Fatalf("Marshal(%T %v): %v", v, v, err)
		}
		want, err := encMode.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("Marshal(%T %v) = %x, the encoder writes %x", v, v, got, want)
		}
	}
	for _, v := range []int{0, -1, 300, math.MinInt, math.MaxInt} {
		b, _ := Marshal(v)
		var back int
		if err := Unmarshal(b, &back); err != nil || back != v {
			t.Errorf("%d came back as %d, %v", v, back, err)
		}
	}
}
