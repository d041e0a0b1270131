package tensorboard

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// The fixtures below are encoded here field by field, as TensorFlow,
// TensorBoard and PyTorch's SummaryWriter write them, so that the reader is
// checked against the wire format rather than against this package's
// own Writer.

// record frames data as one TFRecord.
func record(data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(data)))
	b = binary.LittleEndian.AppendUint32(b, MaskedCRC(b[:8]))
	b = append(b, data...)
	return binary.LittleEndian.AppendUint32(b, MaskedCRC(data))
}

// tfEvent encodes a tensorflow.Event at step holding the given
// Summary.Value messages.
func tfEvent(wall float64, step int64, values ...[]byte) []byte {
	var sum []byte
	for _, v := range values {
		sum = protowire.AppendTag(sum, summaryValue, protowire.BytesType)
		sum = protowire.AppendBytes(sum, v)
	}
	var ev []byte
	ev = protowire.AppendTag(ev, eventWallTime, protowire.Fixed64Type)
	ev = protowire.AppendFixed64(ev, math.Float64bits(wall))
	ev = protowire.AppendTag(ev, eventStep, protowire.VarintType)
	ev = protowire.AppendVarint(ev, uint64(step))
	ev = protowire.AppendTag(ev, eventSummary, protowire.BytesType)
	return protowire.AppendBytes(ev, sum)
}

func tagged(tag string) []byte {
	v := protowire.AppendTag(nil, valueTag, protowire.BytesType)
	return protowire.AppendString(v, tag)
}

// simple is a TF1/PyTorch value: simple_value.
func simple(tag string, x float32) []byte {
	v := tagged(tag)
	v = protowire.AppendTag(v, valueSimpleValue, protowire.Fixed32Type)
	return protowire.AppendFixed32(v, math.Float32bits(x))
}

// tensorValue is a TF2 value: a TensorProto of dtype with the given dims
// and body fields (already encoded), plus the scalars plugin's metadata
// as tf.summary.scalar writes it.
func tensorValue(tag string, dtype uint64, dims []int64, body []byte) []byte {
	var shape []byte
	for _, d := range dims {
		dim := protowire.AppendTag(nil, dimSize, protowire.VarintType)
		dim = protowire.AppendVarint(dim, uint64(d))
		shape = protowire.AppendTag(shape, shapeDim, protowire.BytesType)
		shape = protowire.AppendBytes(shape, dim)
	}
	t := protowire.AppendTag(nil, tensorDtype, protowire.VarintType)
	t = protowire.AppendVarint(t, dtype)
	t = protowire.AppendTag(t, tensorShape, protowire.BytesType)
	t = protowire.AppendBytes(t, shape)
	t = append(t, body...)
	plugin := protowire.AppendTag(nil, 1, protowire.BytesType) // PluginData.plugin_name
	plugin = protowire.AppendString(plugin, "scalars")
	meta := protowire.AppendTag(nil, 1, protowire.BytesType) // SummaryMetadata.plugin_data
	meta = protowire.AppendBytes(meta, plugin)
	v := tagged(tag)
	v = protowire.AppendTag(v, 9, protowire.BytesType) // Summary.Value.metadata
	v = protowire.AppendBytes(v, meta)
	v = protowire.AppendTag(v, valueTensor, protowire.BytesType)
	return protowire.AppendBytes(v, t)
}

func content(b []byte) []byte {
	f := protowire.AppendTag(nil, tensorContent, protowire.BytesType)
	return protowire.AppendBytes(f, b)
}

func packedFloats(num protowire.Number, xs ...float32) []byte {
	var p []byte
	for _, x := range xs {
		p = protowire.AppendFixed32(p, math.Float32bits(x))
	}
	f := protowire.AppendTag(nil, num, protowire.BytesType)
	return protowire.AppendBytes(f, p)
}

func readAll(t *testing.T, tl *Tail, b []byte) []Scalar {
	t.Helper()
	var out []Scalar
	if _, err := tl.Read(bytes.NewReader(b), int64(len(b)), func(s Scalar) { out = append(out, s) }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTailValueEncodings(t *testing.T) {
	le := binary.LittleEndian
	for _, c := range []struct {
		name  string
		value []byte
		want  float64
		none  bool
	}{
		{"simple_value (TF1, SummaryWriter)", simple("loss", 0.25), 0.25, false},
		{"DT_FLOAT tensor_content (TF2)", tensorValue("loss", dtFloat, nil, content(le.AppendUint32(nil, math.Float32bits(1.5)))), 1.5, false},
		{"DT_DOUBLE tensor_content", tensorValue("loss", dtDouble, nil, content(le.AppendUint64(nil, math.Float64bits(0.1)))), 0.1, false},
		{"DT_INT64 tensor_content", tensorValue("loss", dtInt64, nil, content(le.AppendUint64(nil, uint64(1<<40)))), 1 << 40, false},
		{"DT_INT32 tensor_content", tensorValue("loss", dtInt32, nil, content(le.AppendUint32(nil, uint32(0xffffffff)))), -1, false},
		{"DT_HALF tensor_content", tensorValue("loss", dtHalf, nil, content(le.AppendUint16(nil, 0x3e00))), 1.5, false},
		{"float_val packed (SummaryWriter new_style)", tensorValue("loss", dtFloat, nil, packedFloats(tensorFloatVal, 2.5)), 2.5, false},
		{"float_val unpacked", tensorValue("loss", dtFloat, nil, protowire.AppendFixed32(protowire.AppendTag(nil, tensorFloatVal, protowire.Fixed32Type), math.Float32bits(3))), 3, false},
		{"double_val", tensorValue("loss", dtDouble, nil, protowire.AppendBytes(protowire.AppendTag(nil, tensorDoubleVal, protowire.BytesType), protowire.AppendFixed64(nil, math.Float64bits(-7.25)))), -7.25, false},
		{"int_val", tensorValue("loss", dtInt32, nil, protowire.AppendBytes(protowire.AppendTag(nil, tensorIntVal, protowire.BytesType), protowire.AppendVarint(nil, 42))), 42, false},
		{"int64_val", tensorValue("loss", dtInt64, nil, protowire.AppendBytes(protowire.AppendTag(nil, tensorInt64Val, protowire.BytesType), protowire.AppendVarint(nil, 1<<50))), 1 << 50, false},
		{"shape [1] holds one number", tensorValue("loss", dtFloat, []int64{1}, packedFloats(tensorFloatVal, 4)), 4, false},
		{"histogram-like tensor [3] is not a scalar", tensorValue("loss", dtFloat, []int64{3}, packedFloats(tensorFloatVal, 1, 2, 3)), 0, true},
		{"string tensor (text plugin) is not a scalar", tensorValue("loss", 7, nil, protowire.AppendBytes(protowire.AppendTag(nil, 8, protowire.BytesType), []byte("hi"))), 0, true},
		{"content of the wrong size", tensorValue("loss", dtDouble, nil, content([]byte{1, 2, 3})), 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tl Tail
			got := readAll(t, &tl, record(tfEvent(1700000000.5, 7, c.value)))
			if tl.Bad != 0 {
				t.Fatalf("Bad = %d", tl.Bad)
			}
			if c.none {
				if len(got) != 0 {
					t.Fatalf("got %+v, want no scalar", got)
				}
				return
			}
			if len(got) != 1 || got[0].Tag != "loss" || got[0].Step != 7 || got[0].WallTime != 1700000000.5 || got[0].Value != c.want {
				t.Fatalf("got %+v, want loss=%v at step 7", got, c.want)
			}
		})
	}
}

// fileOf is an event file of n steps, two scalars each in one event (TF1)
// or one event per scalar (TF2), after the file-version event.
func fileOf(n int) []byte {
	fv := protowire.AppendTag(nil, eventFileVersion, protowire.BytesType)
	b := record(protowire.AppendString(fv, FileVersion))
	for i := 0; i < n; i++ {
		b = append(b, record(tfEvent(float64(i), int64(i), simple("a", float32(i)), simple("b", float32(-i))))...)
		b = append(b, record(tfEvent(float64(i), int64(i), tensorValue("c", dtDouble, nil, content(binary.LittleEndian.AppendUint64(nil, math.Float64bits(float64(i)/3))))))...)
	}
	return b
}

func TestTailIncrementalAnySplit(t *testing.T) {
	full := fileOf(20)
	var want []Scalar
	var tl Tail
	want = readAll(t, &tl, full)
	if len(want) != 60 {
		t.Fatalf("whole file: %d scalars, want 60", len(want))
	}
	// The file grows by pieces of every size; each scalar comes once, in
	// order, whatever the cut (mid-header, mid-data, mid-checksum).
	for _, step := range []int{1, 3, 7, 12, 100, 1000} {
		var tl Tail
		var got []Scalar
		r := bytes.NewReader(full)
		for size := 0; ; size = min(size+step, len(full)) {
			if _, err := tl.Read(r, int64(size), func(s Scalar) { got = append(got, s) }); err != nil {
				t.Fatal(err)
			}
			if size == len(full) {
				break
			}
		}
		if tl.Bad != 0 || len(got) != len(want) {
			t.Fatalf("growth by %d bytes: %d scalars, %d bad; want %d, 0", step, len(got), tl.Bad, len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("growth by %d bytes: scalar %d = %+v, want %+v", step, i, got[i], want[i])
			}
		}
		if tl.Off != int64(len(full)) {
			t.Fatalf("offset %d, want %d", tl.Off, len(full))
		}
	}
}

func TestTailDamage(t *testing.T) {
	good := func(i int) []byte { return record(tfEvent(0, int64(i), simple("x", float32(i)))) }
	t.Run("data checksum", func(t *testing.T) {
		bad := good(1)
		bad[14] ^= 0xff // a byte of the data
		b := append(append(good(0), bad...), good(2)...)
		var tl Tail
		got := readAll(t, &tl, b)
		if tl.Bad != 1 || len(got) != 2 || got[1].Step != 2 {
			t.Fatalf("Bad=%d got=%+v; want one bad record and steps 0 and 2", tl.Bad, got)
		}
	})
	t.Run("length checksum", func(t *testing.T) {
		bad := good(1)
		bad[9] ^= 0xff // the length's checksum
		b := append(append(good(0), bad...), good(2)...)
		var tl Tail
		got := readAll(t, &tl, b)
		if tl.Bad != 1 || len(got) != 2 || got[1].Step != 2 {
			t.Fatalf("Bad=%d got=%+v; want one bad stretch and steps 0 and 2", tl.Bad, got)
		}
	})
	t.Run("garbage between records", func(t *testing.T) {
		b := append(good(0), bytes.Repeat([]byte{0xab}, 200<<10)...)
		b = append(b, good(1)...)
		var tl Tail
		got := readAll(t, &tl, b)
		if tl.Bad != 1 || len(got) != 2 {
			t.Fatalf("Bad=%d got=%d scalars; want 1 and 2", tl.Bad, len(got))
		}
	})
	t.Run("absurd length refused without allocating", func(t *testing.T) {
		hdr := binary.LittleEndian.AppendUint64(nil, 1<<50)
		hdr = binary.LittleEndian.AppendUint32(hdr, MaskedCRC(hdr))
		b := append(append(good(0), hdr...), make([]byte, 64)...)
		var tl Tail
		got := readAll(t, &tl, b)
		if tl.Bad != 1 || !tl.Broken || len(got) != 1 {
			t.Fatalf("Bad=%d Broken=%v got=%d; want 1, true, 1", tl.Bad, tl.Broken, len(got))
		}
		r := bytes.NewReader(hdr)
		allocs := testing.AllocsPerRun(10, func() {
			var tl Tail
			_, _ = tl.Read(r, 1<<20, func(Scalar) {})
		})
		if allocs > 2 {
			t.Fatalf("%v allocations for an absurd length", allocs)
		}
	})
	t.Run("large record passed over", func(t *testing.T) {
		big := record(append(tfEvent(0, 5), make([]byte, 3<<20)...))
		b := append(append(good(0), big...), good(1)...)
		var tl Tail
		got := readAll(t, &tl, b)
		if tl.Bad != 0 || len(got) != 2 || got[1].Step != 1 || cap(tl.buf) > maxDecoded+4 {
			t.Fatalf("Bad=%d got=%+v buf=%d", tl.Bad, got, cap(tl.buf))
		}
		big[len(big)-1] ^= 1
		tl = Tail{}
		if got = readAll(t, &tl, append(append(good(0), big...), good(1)...)); tl.Bad != 1 || len(got) != 2 {
			t.Fatalf("damaged large record: Bad=%d got=%d", tl.Bad, len(got))
		}
	})
	t.Run("rewritten file is read again", func(t *testing.T) {
		var tl Tail
		readAll(t, &tl, append(good(0), good(1)...))
		short := good(9)
		var got []Scalar
		reset, err := tl.Read(bytes.NewReader(short), int64(len(short)), func(s Scalar) { got = append(got, s) })
		if err != nil || !reset || len(got) != 1 || got[0].Step != 9 {
			t.Fatalf("reset=%v err=%v got=%+v", reset, err, got)
		}
	})
}
