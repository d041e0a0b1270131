package wire

import (
	"encoding/binary"
	"errors"
	"math"
)

// ErrShort reports a payload that ended before its fields did.
var ErrShort = errors.New("wire: truncated message")

// AppendUvarint appends v as a varint.
func AppendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

// AppendBytes appends p with its length.
func AppendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// AppendString appends s with its length.
func AppendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendFloat appends f as 8 bytes.
func AppendFloat(b []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
}

// Dec reads fields from a payload. The first failure sticks in Err and
// later reads return zero values, so callers check once at the end.
type Dec struct {
	B   []byte
	Err error
}

// Uvarint reads a varint.
func (d *Dec) Uvarint() uint64 {
	if d.Err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.B)
	if n <= 0 {
		d.Err = ErrShort
		return 0
	}
	d.B = d.B[n:]
	return v
}

// Byte reads one byte.
func (d *Dec) Byte() byte {
	if d.Err != nil || len(d.B) < 1 {
		d.Err = ErrShort
		return 0
	}
	v := d.B[0]
	d.B = d.B[1:]
	return v
}

// Fixed reads exactly len(dst) bytes into dst.
func (d *Dec) Fixed(dst []byte) {
	if d.Err != nil || len(d.B) < len(dst) {
		d.Err = ErrShort
		return
	}
	copy(dst, d.B)
	d.B = d.B[len(dst):]
}

// Bytes reads a length-prefixed byte slice; it aliases the payload.
func (d *Dec) Bytes() []byte {
	n := d.Uvarint()
	if d.Err != nil || uint64(len(d.B)) < n {
		d.Err = ErrShort
		return nil
	}
	v := d.B[:n:n]
	d.B = d.B[n:]
	return v
}

// String reads a length-prefixed string.
func (d *Dec) String() string { return string(d.Bytes()) }

// Float reads 8 bytes as a float64.
func (d *Dec) Float() float64 {
	if d.Err != nil || len(d.B) < 8 {
		d.Err = ErrShort
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.B))
	d.B = d.B[8:]
	return v
}

// Count reads a varint used as an element count, bounded by the bytes left
// (each element takes at least one byte) so a corrupt count cannot make the
// caller allocate a huge slice.
func (d *Dec) Count() int {
	n := d.Uvarint()
	if n > uint64(len(d.B)) {
		d.Err = ErrShort
		return 0
	}
	return int(n)
}
