package wire

import (
	"bytes"
	"encoding/binary"
	"net"
	"sync"
	"testing"
)

func TestFramesRoundTrip(t *testing.T) {
	a, b := net.Pipe()
	ca, cb := New(a), New(b)
	defer ca.Close()
	defer cb.Close()
	const n = 1000
	go func() {
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range n / 4 {
					_ = ca.Append(byte(g+1), func(p []byte) []byte {
						p = AppendUvarint(p, uint64(i))
						p = AppendString(p, "payload")
						return AppendFloat(p, 1.5)
					})
					_ = ca.Flush()
				}
			}()
		}
		wg.Wait()
	}()
	counts := map[byte]uint64{}
	for range n {
		typ, p, err := cb.Recv()
		if err != nil {
			t.Fatal(err)
		}
		d := Dec{B: p}
		i := d.Uvarint()
		s := d.String()
		f := d.Float()
		if d.Err != nil || s != "payload" || f != 1.5 || i != counts[typ] {
			t.Fatalf("frame type %d: %d %q %v %v (want index %d)", typ, i, s, f, d.Err, counts[typ])
		}
		counts[typ]++
	}
}

func TestCorruptInputIsAnError(t *testing.T) {
	d := Dec{B: []byte{0xff}}
	_ = d.Bytes()
	if d.Err == nil {
		t.Fatal("truncated bytes decoded")
	}
	d = Dec{B: []byte{200, 1}}
	if d.Count(); d.Err == nil {
		t.Fatal("a count larger than the payload was accepted")
	}
	a, b := net.Pipe()
	go func() {
		var hdr [5]byte
		binary.LittleEndian.PutUint32(hdr[:], 10)
		_, _ = a.Write(append(hdr[:], bytes.Repeat([]byte{1}, 3)...))
		a.Close()
	}()
	if _, _, err := New(b).Recv(); err == nil {
		t.Fatal("a short frame was accepted")
	}
}
