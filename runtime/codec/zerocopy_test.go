package codec

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

type Vec []float64

type Emb struct{ E []uint8 }

type inner struct {
	W []float64
	I []int32
}

type batch struct {
	Name    string
	Obs     [][]float32
	Actions []int64
	Rewards []float64
	Raw     []byte
	Meta    map[string]any
	Inner   inner
	Ptr     *inner
	Fixed   [2][]float64
	Named   Vec
	Nested  map[string][]float64
	Nil     []float64
	Empty   []int64
	private int
	Emb
}

type plain struct {
	A int
	B string
	C []string
	D map[string]float64
}

func sampleBatch() batch {
	return batch{
		Name:    "b",
		Obs:     [][]float32{{1, 2, 3}, {4, 5}},
		Actions: []int64{-1, 0, 1 << 40},
		Rewards: []float64{0.5, -1.25},
		Raw:     []byte("raw bytes"),
		Meta:    map[string]any{"lr": 0.001, "tag": "x", "w": []float64{1, 2}},
		Inner:   inner{W: []float64{3, 4, 5}, I: []int32{7}},
		Ptr:     &inner{W: []float64{6}},
		Fixed:   [2][]float64{{1}, {2, 3}},
		Named:   Vec{9, 8},
		Nested:  map[string][]float64{"a": {1.5}},
		Empty:   []int64{},
		Emb:     Emb{E: []uint8{1, 2, 3}},
	}
}

// roundTrip encodes v and decodes it into a new value of the same type.
func roundTrip(t *testing.T, v any) (any, []byte) {
	t.Helper()
	buf, err := Encode(v)
	if err != nil {
		t.Fatalf("Encode(%T): %v", v, err)
	}
	if n, err := EncodedSize(v); err != nil || n != len(buf) {
		t.Fatalf("EncodedSize = %d, %v; Encode wrote %d", n, err, len(buf))
	}
	p := reflect.New(reflect.TypeOf(v))
	if err := DecodeZeroCopy(buf, p.Interface()); err != nil {
		t.Fatalf("DecodeZeroCopy(%T): %v", v, err)
	}
	return p.Elem().Interface(), buf
}

func TestZeroCopyRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		v    any
	}{
		{"int", 42},
		{"negative int64", int64(-7)},
		{"float64", 3.25},
		{"bool", true},
		{"string", "hello"},
		{"empty string", ""},
		{"strings", []string{"a", "b"}},
		{"map", map[string]int{"x": 1, "y": 2}},
		{"plain struct", plain{A: 1, B: "b", C: []string{"c"}, D: map[string]float64{"d": 1}}},
		{"float32s", []float32{1, -2, 3.5}},
		{"float64s", []float64{1, 2, 3}},
		{"int32s", []int32{1, -2}},
		{"int64s", []int64{1 << 50, -3}},
		{"uint8s", []uint8{0, 255}},
		{"empty float64s", []float64{}},
		{"nil float64s", []float64(nil)},
		{"named slice", Vec{1, 2}},
		{"nested slices", [][]int64{{1}, {}, nil, {2, 3}}},
		{"array of slices", [3][]float32{{1}, nil, {2}}},
		{"map of slices", map[string][]float64{"a": {1}, "b": nil}},
		{"pointer to struct", &inner{W: []float64{1}}},
		{"batch", sampleBatch()},
		{"slice of batches", []batch{sampleBatch(), {Name: "second"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _ := roundTrip(t, c.v)
			want := c.v
			if b, ok := want.(batch); ok {
				b.private = 0
				want = b
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round trip:\n got %#v\nwant %#v", got, want)
			}
		})
	}
}

func within(t *testing.T, buf []byte, name string, p unsafe.Pointer) {
	t.Helper()
	start := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	if a := uintptr(p); a < start || a >= start+uintptr(len(buf)) {
		t.Errorf("%s: data at %#x lies outside the buffer [%#x, %#x): it was copied", name, a, start, start+uintptr(len(buf)))
	} else if (a-start)%Align != 0 {
		t.Errorf("%s: buffer at offset %d is not 64-byte aligned", name, a-start)
	}
}

func TestZeroCopyPointsIntoBuffer(t *testing.T) {
	got, buf := roundTrip(t, sampleBatch())
	b := got.(batch)
	within(t, buf, "Obs[0]", unsafe.Pointer(&b.Obs[0][0]))
	within(t, buf, "Actions", unsafe.Pointer(&b.Actions[0]))
	within(t, buf, "Raw", unsafe.Pointer(&b.Raw[0]))
	within(t, buf, "Inner.W (array inside a struct)", unsafe.Pointer(&b.Inner.W[0]))
	within(t, buf, "Ptr.W", unsafe.Pointer(&b.Ptr.W[0]))
	within(t, buf, "Fixed[1]", unsafe.Pointer(&b.Fixed[1][0]))
	within(t, buf, "Named", unsafe.Pointer(&b.Named[0]))
	within(t, buf, "Nested[a]", unsafe.Pointer(&b.Nested["a"][0]))
	within(t, buf, "Emb.E (embedded)", unsafe.Pointer(&b.E[0]))
	w := b.Meta["w"].([]float64) // an array inside an interface
	within(t, buf, "Meta[w]", unsafe.Pointer(&w[0]))
	if cap(b.Rewards) != len(b.Rewards) {
		t.Error("zero-copy slices must have cap == len so append copies")
	}
}

func TestDecodeIntoAny(t *testing.T) {
	buf, err := Encode(map[string]any{"w": []float64{1, 2}, "n": "x", "l": []any{[]int32{5}}})
	if err != nil {
		t.Fatal(err)
	}
	var got any
	if err := DecodeZeroCopy(buf, &got); err != nil {
		t.Fatal(err)
	}
	m := got.(map[any]any)
	w := m["w"].([]float64)
	if !reflect.DeepEqual(w, []float64{1, 2}) || m["n"] != "x" || m["l"].([]any)[0].([]int32)[0] != 5 {
		t.Fatalf("decoded %#v", got)
	}
	within(t, buf, "w", unsafe.Pointer(&w[0]))
}

// TestArrowLayout shows that each array buffer is a valid Arrow values
// buffer: arrow-go reads it in place, with no copy and no validity bitmap.
func TestArrowLayout(t *testing.T) {
	want := make([]float64, 1000)
	for i := range want {
		want[i] = float64(i) * 0.5
	}
	buf, err := Encode(inner{W: want, I: []int32{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	var got inner
	if err := DecodeZeroCopy(buf, &got); err != nil {
		t.Fatal(err)
	}
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&got.W[0])), len(got.W)*8)
	if uintptr(unsafe.Pointer(&raw[0]))%64 != 0 {
		t.Fatal("buffer not 64-byte aligned")
	}
	data := array.NewData(arrow.PrimitiveTypes.Float64, len(want), []*memory.Buffer{nil, memory.NewBufferBytes(raw)}, nil, 0, 0)
	defer data.Release()
	arr := array.NewFloat64Data(data)
	defer arr.Release()
	if arr.NullN() != 0 || !reflect.DeepEqual(arr.Float64Values(), want) {
		t.Fatal("arrow does not read the buffer as the same float64 array")
	}
	if &arr.Float64Values()[0] != &got.W[0] {
		t.Fatal("arrow copied the buffer")
	}
}

func TestEncodeToUnalignedAndErrors(t *testing.T) {
	v := inner{W: []float64{1, 2, 3}}
	enc, err := Prepare(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := enc.EncodeTo(make([]byte, enc.Size()-1)); err == nil {
		t.Fatal("EncodeTo into a short buffer must fail")
	}
	// A misaligned buffer still decodes correctly (by copying).
	big := make([]byte, enc.Size()+1)
	if _, err := enc.EncodeTo(big[1:]); err != nil {
		t.Fatal(err)
	}
	var got inner
	if err := DecodeZeroCopy(big[1:], &got); err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("misaligned decode: %v %#v", err, got)
	}
	// Decoding into the wrong element type is an error, not garbage.
	var wrong struct{ W []int64 }
	buf, _ := Encode(v)
	if err := DecodeZeroCopy(buf, &wrong); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("kind mismatch: %v", err)
	}
	if err := DecodeZeroCopy([]byte("not an encoding at all"), &got); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad magic: %v", err)
	}
	if err := DecodeZeroCopy(buf, got); err == nil {
		t.Fatal("decoding into a non-pointer must fail")
	}
}

type withFunc struct {
	Name string
	F    func()
}

type withIface struct {
	Name string
	V    any
}

func TestUncarryableValues(t *testing.T) {
	cases := []struct {
		name string
		v    any
		want string
	}{
		{"func field", withFunc{}, "field codec.withFunc.F"},
		{"chan", make(chan int), "chan int"},
		{"unsafe pointer", unsafe.Pointer(nil), "unsafe.Pointer"},
		{"func in interface field", withIface{V: func() {}}, "field codec.withIface.V"},
		{"chan in map of any", map[string]any{"c": make(chan int)}, "chan int"},
		{"func deep in []any", []any{1, []any{withIface{V: func() {}}}}, "func()"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err1 := Marshal(c.v)
			_, err2 := Prepare(c.v)
			for _, err := range []error{err1, err2} {
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "cannot carry") {
					t.Errorf("err = %v, want one naming %q", err, c.want)
				}
			}
		})
	}
	// A nil interface, or one holding a carryable value, is fine.
	if _, err := Marshal(withIface{V: []int{1}}); err != nil {
		t.Fatal(err)
	}
}

func TestCyclicValueIsAnError(t *testing.T) {
	type node struct {
		Next any
	}
	n := &node{}
	n.Next = n
	if _, err := Prepare(n); err == nil || !strings.Contains(err.Error(), "cyclic") {
		t.Fatalf("Prepare of a cyclic value: %v", err)
	}
	if err := CheckValue(n); err == nil {
		t.Fatal("CheckValue of a cyclic value must fail")
	}
}

func TestMarshalUnmarshalSmall(t *testing.T) {
	in := plain{A: 7, B: "s", C: []string{"x"}, D: map[string]float64{"k": 2}}
	b, err := Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out plain
	if err := Unmarshal(b, &out); err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("%v %#v", err, out)
	}
}
