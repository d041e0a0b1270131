package tensorboard

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Limits of Tail. A scalar event is a few hundred bytes; records up to
// maxDecoded are read whole and decoded, larger ones (images, graphs) are
// passed over through a fixed buffer with their checksum checked, and a
// length past maxRecord cannot be a record of an event file: the file is
// refused from there on, nothing allocated for it.
const (
	maxDecoded = 1 << 20
	maxRecord  = 1 << 32
	tailChunk  = 64 << 10
)

// Scalar is one scalar value of an event file: a summary value's
// simple_value (TensorBoard, TF1, PyTorch's SummaryWriter) or a tensor
// holding one number (TF2's tf.summary.scalar, SummaryWriter with
// new_style).
type Scalar struct {
	WallTime float64
	Step     int64
	Tag      string
	Value    float64
}

// Tail reads an event file that grows by appended records, each call
// parsing only what was added since the last: it keeps the offset of the
// first record not yet read. A record not whole yet (a writer mid-write)
// waits for the next call. Records whose checksums fail are counted in Bad
// and passed over (a damaged length is passed a byte at a time until a
// valid header is found again). Memory stays bounded by maxDecoded
// whatever the file holds. The zero Tail reads from the start.
type Tail struct {
	// Off is the offset of the next record to read.
	Off int64
	// Bad counts records refused: checksum mismatches, undecodable
	// events, and a length no record can have.
	Bad int
	// Broken is set once the file held a length no record can have;
	// nothing after it is read.
	Broken bool

	buf     []byte
	lost    bool   // passing over damaged bytes: counted once per stretch
	skip    int64  // bytes of a large record's data still to pass over
	skipCRC uint32 // running checksum of the large record's data
	skipLen int64  // the large record's data length
}

// Read parses the records between t.Off and size (the file's current
// size) from r, calling fn with each scalar in file order. A file shorter
// than t.Off was rewritten: Read starts again from its beginning and
// reports reset, so that the caller drops what it derived before.
func (t *Tail) Read(r io.ReaderAt, size int64, fn func(Scalar)) (reset bool, err error) {
	if size < t.Off {
		*t = Tail{buf: t.buf}
		reset = true
	}
	for !t.Broken && t.Off < size {
		if t.skip > 0 {
			if err := t.passOver(r, size); err != nil || t.skip > 0 {
				return reset, err
			}
			continue
		}
		if size-t.Off < 12 {
			return reset, nil // a header not whole yet
		}
		var hdr [12]byte
		if _, err := r.ReadAt(hdr[:], t.Off); err != nil {
			return reset, err
		}
		n := binary.LittleEndian.Uint64(hdr[:])
		if binary.LittleEndian.Uint32(hdr[8:]) != MaskedCRC(hdr[:8]) {
			if !t.lost {
				t.Bad++
				t.lost = true
			}
			if err := t.resync(r, size); err != nil {
				return reset, err
			}
			continue
		}
		t.lost = false
		if n >= maxRecord {
			t.Bad++
			t.Broken = true
			return reset, nil
		}
		if size-t.Off-12 < int64(n)+4 {
			return reset, nil // the record is not whole yet
		}
		if n > maxDecoded {
			t.skip, t.skipLen, t.skipCRC = int64(n), int64(n), 0
			continue
		}
		if cap(t.buf) < int(n)+4 {
			t.buf = make([]byte, int(n)+4, max(int(n)+4, tailChunk))
		}
		b := t.buf[:n+4]
		if _, err := r.ReadAt(b, t.Off+12); err != nil {
			return reset, err
		}
		t.Off += 16 + int64(n)
		data := b[:n]
		if binary.LittleEndian.Uint32(b[n:]) != MaskedCRC(data) {
			t.Bad++
			continue
		}
		if err := scalars(data, fn); err != nil {
			t.Bad++
		}
	}
	return reset, nil
}

// resync moves t.Off from a damaged header towards the next offset that
// holds a valid one, looking through one buffer of the file per call.
func (t *Tail) resync(r io.ReaderAt, size int64) error {
	if cap(t.buf) < tailChunk {
		t.buf = make([]byte, tailChunk)
	}
	b := t.buf[:min(int64(tailChunk), size-t.Off)]
	if _, err := r.ReadAt(b, t.Off); err != nil {
		return err
	}
	for i := 1; i+12 <= len(b); i++ {
		if binary.LittleEndian.Uint32(b[i+8:]) == MaskedCRC(b[i:i+8]) {
			t.Off += int64(i)
			return nil
		}
	}
	// No header starts in this buffer before its last 11 bytes.
	t.Off += int64(max(1, len(b)-11))
	return nil
}

// passOver reads a large record's data through a fixed buffer, checking
// its checksum, and moves past it once all of it is in the file.
func (t *Tail) passOver(r io.ReaderAt, size int64) error {
	if size-t.Off-12 < t.skipLen+4 {
		return nil // wait until the whole record is there
	}
	if cap(t.buf) < tailChunk {
		t.buf = make([]byte, tailChunk)
	}
	for t.skip > 0 {
		at := t.Off + 12 + t.skipLen - t.skip
		b := t.buf[:min(int64(tailChunk), t.skip)]
		if _, err := r.ReadAt(b, at); err != nil {
			return err
		}
		t.skipCRC = crc32.Update(t.skipCRC, castagnoli, b)
		t.skip -= int64(len(b))
	}
	var sum [4]byte
	if _, err := r.ReadAt(sum[:], t.Off+12+t.skipLen); err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(sum[:]) != mask(t.skipCRC) {
		t.Bad++
	}
	t.Off += 16 + t.skipLen
	return nil
}

func mask(c uint32) uint32 { return ((c >> 15) | (c << 17)) + 0xa282ead8 }

// Fields of tensorflow.Summary.Value and tensorflow.TensorProto
// (tensorflow/core/framework/summary.proto and tensor.proto) that carry
// scalars.
const (
	valueTensor     protowire.Number = 8 // TensorProto
	tensorDtype     protowire.Number = 1 // DataType enum
	tensorShape     protowire.Number = 2 // TensorShapeProto
	tensorContent   protowire.Number = 4 // bytes, little-endian values
	tensorHalfVal   protowire.Number = 13
	tensorFloatVal  protowire.Number = 5  // repeated float
	tensorDoubleVal protowire.Number = 6  // repeated double
	tensorIntVal    protowire.Number = 7  // repeated int32 (also int8/16, uint8/16)
	tensorInt64Val  protowire.Number = 10 // repeated int64
	shapeDim        protowire.Number = 2  // repeated TensorShapeProto.Dim
	dimSize         protowire.Number = 1  // int64
)

// tensorflow.DataType values of the numeric scalars read.
const (
	dtFloat  = 1
	dtDouble = 2
	dtInt32  = 3
	dtUint8  = 4
	dtInt16  = 5
	dtInt8   = 6
	dtInt64  = 9
	dtUint16 = 17
	dtHalf   = 19
	dtUint32 = 22
	dtUint64 = 23
)

// scalars calls fn with each scalar of one event's bytes.
func scalars(b []byte, fn func(Scalar)) error {
	var wall float64
	var step int64
	var summary []byte
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == eventWallTime && typ == protowire.Fixed64Type:
			wall = math.Float64frombits(x)
		case num == eventStep && typ == protowire.VarintType:
			step = int64(x)
		case num == eventSummary && typ == protowire.BytesType:
			summary = v
		}
		return nil
	})
	if err != nil || summary == nil {
		return err
	}
	return eachField(summary, func(num protowire.Number, typ protowire.Type, val []byte, _ uint64) error {
		if num != summaryValue || typ != protowire.BytesType {
			return nil
		}
		var tag []byte
		var v float64
		var has bool
		err := eachField(val, func(num protowire.Number, typ protowire.Type, s []byte, x uint64) error {
			switch {
			case num == valueTag && typ == protowire.BytesType:
				tag = s
			case num == valueSimpleValue && typ == protowire.Fixed32Type:
				v, has = float64(math.Float32frombits(uint32(x))), true
			case num == valueTensor && typ == protowire.BytesType:
				v, has = tensorScalar(s)
			}
			return nil
		})
		if err == nil && has {
			fn(Scalar{WallTime: wall, Step: step, Tag: string(tag), Value: v})
		}
		return err
	})
}

// tensorScalar reads a TensorProto holding exactly one number; tensors of
// more elements (histograms, images) and of other types (text) give false.
func tensorScalar(b []byte) (float64, bool) {
	var dtype uint64
	elems := int64(1)
	var content []byte
	var vals []float64
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch num {
		case tensorDtype:
			dtype = x
		case tensorShape:
			return eachField(v, func(num protowire.Number, typ protowire.Type, d []byte, _ uint64) error {
				if num != shapeDim || typ != protowire.BytesType {
					return nil
				}
				return eachField(d, func(num protowire.Number, typ protowire.Type, _ []byte, x uint64) error {
					if num == dimSize && typ == protowire.VarintType {
						elems *= int64(x)
					}
					return nil
				})
			})
		case tensorContent:
			content = v
		case tensorFloatVal, tensorDoubleVal, tensorIntVal, tensorInt64Val, tensorHalfVal:
			vals = appendRepeated(vals, num, typ, v, x)
		}
		return nil
	})
	if err != nil || elems != 1 {
		return 0, false
	}
	if content != nil {
		return fromContent(dtype, content)
	}
	if len(vals) == 1 {
		if dtype == dtHalf {
			return halfToFloat(uint16(vals[0])), true
		}
		return vals[0], true
	}
	return 0, false
}

// appendRepeated adds the values of one repeated numeric field, packed
// (one bytes field) or not (one field per value).
func appendRepeated(vals []float64, num protowire.Number, typ protowire.Type, v []byte, x uint64) []float64 {
	one := func(x uint64) float64 {
		switch num {
		case tensorFloatVal:
			return float64(math.Float32frombits(uint32(x)))
		case tensorDoubleVal:
			return math.Float64frombits(x)
		case tensorIntVal:
			return float64(int32(x))
		case tensorInt64Val:
			return float64(int64(x))
		}
		return float64(x) // half_val: the raw bits, converted by the caller
	}
	if typ != protowire.BytesType {
		return append(vals, one(x))
	}
	for len(v) > 0 {
		var y uint64
		var n int
		switch num {
		case tensorFloatVal:
			var z uint32
			z, n = protowire.ConsumeFixed32(v)
			y = uint64(z)
		case tensorDoubleVal:
			y, n = protowire.ConsumeFixed64(v)
		default:
			y, n = protowire.ConsumeVarint(v)
		}
		if n < 0 {
			return vals
		}
		vals = append(vals, one(y))
		v = v[n:]
	}
	return vals
}

// fromContent reads one little-endian value of dtype from tensor_content.
func fromContent(dtype uint64, c []byte) (float64, bool) {
	le := binary.LittleEndian
	switch {
	case dtype == dtFloat && len(c) == 4:
		return float64(math.Float32frombits(le.Uint32(c))), true
	case dtype == dtDouble && len(c) == 8:
		return math.Float64frombits(le.Uint64(c)), true
	case dtype == dtInt32 && len(c) == 4:
		return float64(int32(le.Uint32(c))), true
	case dtype == dtUint32 && len(c) == 4:
		return float64(le.Uint32(c)), true
	case dtype == dtInt64 && len(c) == 8:
		return float64(int64(le.Uint64(c))), true
	case dtype == dtUint64 && len(c) == 8:
		return float64(le.Uint64(c)), true
	case dtype == dtInt16 && len(c) == 2:
		return float64(int16(le.Uint16(c))), true
	case dtype == dtUint16 && len(c) == 2:
		return float64(le.Uint16(c)), true
	case dtype == dtHalf && len(c) == 2:
		return halfToFloat(le.Uint16(c)), true
	case dtype == dtInt8 && len(c) == 1:
		return float64(int8(c[0])), true
	case dtype == dtUint8 && len(c) == 1:
		return float64(c[0]), true
	}
	return 0, false
}

// halfToFloat converts IEEE 754 half-precision bits.
func halfToFloat(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac == 0 {
			return math.Inf(int(sign))
		}
		return math.NaN()
	}
	return sign * math.Ldexp(1+frac/1024, exp-15)
}
