package codec

import "encoding/binary"

// marshalInt encodes the plain integers and booleans that most small task
// arguments are, byte for byte as the CBOR encoder would (the shortest
// head of major type 0 or 1; simple values 20 and 21), without its
// reflection, which a profile of queueing a million calls of a function of
// an int put at 5–8% of the driver's CPU (benchmarks/results/leases-queue.md, "Queued
// tasks: one finalizer per block of references"). Named types fall through
// to the encoder, which honours their own methods.
func marshalInt(v any) ([]byte, bool) {
	switch x := v.(type) {
	case int:
		return signedHead(int64(x)), true
	case int64:
		return signedHead(x), true
	case int32:
		return signedHead(int64(x)), true
	case uint64:
		return head(0, x), true
	case uint32:
		return head(0, uint64(x)), true
	case uint:
		return head(0, uint64(x)), true
	case bool:
		if x {
			return []byte{0xf5}, true
		}
		return []byte{0xf4}, true
	}
	return nil, false
}

// signedHead is the CBOR encoding of x: major type 0 for x ≥ 0, 1 (holding
// -1-x) below.
func signedHead(x int64) []byte {
	if x >= 0 {
		return head(0, uint64(x))
	}
	return head(1, ^uint64(x))
}

// head encodes a CBOR data item head of the given major type and argument
// in its shortest form.
func head(major byte, n uint64) []byte {
	m := major << 5
	var b []byte
	switch {
	case n < 24:
		return []byte{m | byte(n)}
	case n <= 0xff:
		return []byte{m | 24, byte(n)}
	case n <= 0xffff:
		b = make([]byte, 3)
		b[0] = m | 25
		binary.BigEndian.PutUint16(b[1:], uint16(n))
	case n <= 0xffffffff:
		b = make([]byte, 5)
		b[0] = m | 26
		binary.BigEndian.PutUint32(b[1:], uint32(n))
	default:
		b = make([]byte, 9)
		b[0] = m | 27
		binary.BigEndian.PutUint64(b[1:], n)
	}
	return b
}
