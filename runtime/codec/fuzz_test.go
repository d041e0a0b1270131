package codec

import (
	"encoding/binary"
	"runtime"
	"testing"
)

// FuzzDecode feeds corrupt encodings to both decoders: each must return an
// error or a value, never panic, and never allocate more than the input can
// justify (array lengths are checked against the buffer before any slice is
// made; CBOR lengths are checked against the input before allocating).
// Run with: go test ./runtime/codec -run '^$' -fuzz FuzzDecode -fuzztime 60s
func FuzzDecode(f *testing.F) {
	for _, v := range []any{
		sampleBatch(),
		inner{W: []float64{1, 2, 3}, I: []int32{4}},
		map[string]any{"w": []float64{1}, "s": "x", "l": []any{[]int32{1}}},
		[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9},
		plain{A: 1, B: "b", C: []string{"c"}},
		"string", 42, nil,
	} {
		b, err := Encode(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		m, err := Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(m)
	}
	// Hand-made corruptions: a header length past the end, and an array
	// placeholder claiming 2^60 elements.
	bad := make([]byte, 64)
	copy(bad, magic)
	binary.LittleEndian.PutUint32(bad[8:], 1<<31)
	f.Add(bad)
	huge, _ := Encode(inner{W: []float64{1}})
	huge2 := append([]byte(nil), huge...)
	for i := prefixLen; i+9 < len(huge2); i++ {
		if huge2[i] == 0x01 && huge2[i-1] == 0x00 { // the Len of W's placeholder
			huge2[i-1] = 0x1b // uint64 follows
		}
	}
	f.Add(huge2)

	f.Fuzz(func(t *testing.T, data []byte) {
		var b batch
		_ = DecodeZeroCopy(data, &b)
		var a any
		_ = DecodeZeroCopy(data, &a)
		var in inner
		_ = DecodeZeroCopy(data, &in)
		var fs []float64
		_ = DecodeZeroCopy(data, &fs)
		var p plain
		_ = Unmarshal(data, &p)
		var u any
		_ = Unmarshal(data, &u)
	})
}

// TestCorruptLengthsAllocateLittle: headers that claim billions of elements
// or arrays far past the buffer fail without allocating for those claims.
func TestCorruptLengthsAllocateLittle(t *testing.T) {
	mk := func(header []byte) []byte {
		b := make([]byte, prefixLen+len(header)+64)
		copy(b, magic)
		binary.LittleEndian.PutUint32(b[8:], uint32(len(header)))
		copy(b[prefixLen:], header)
		return b
	}
	cases := map[string][]byte{
		"array of 2^31-1 structs":      mk([]byte{0x9a, 0x7f, 0xff, 0xff, 0xff, 0xa0}),
		"map of 2^24 pairs":            mk([]byte{0xba, 0x01, 0x00, 0x00, 0x00}),
		"byte string of 4 GiB":         mk([]byte{0x5a, 0xff, 0xff, 0xff, 0xff}),
		"placeholder of 2^60 elements": mk([]byte{0xda, 0x67, 0x72, 0x61, 0x79, 0x83, 0x02, 0x00, 0x1b, 0x10, 0, 0, 0, 0, 0, 0, 0}),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var b []batch
			err1 := DecodeZeroCopy(data, &b)
			var fs []float64
			err2 := DecodeZeroCopy(data, &fs)
			var a any
			err3 := DecodeZeroCopy(data, &a)
			runtime.ReadMemStats(&after)
			if err1 == nil || err2 == nil || err3 == nil {
				t.Fatalf("corrupt input decoded without error: %v / %v / %v", err1, err2, err3)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
				t.Fatalf("decoding %d corrupt bytes allocated %d bytes", len(data), n)
			}
		})
	}
}
