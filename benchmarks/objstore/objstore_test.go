package objstorebench

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/codec"
	"github.com/gray-ml/gray/runtime/objstore"
)

func open(b *testing.B, capacity int64) *objstore.Store {
	b.Helper()
	s, err := objstore.Open(objstore.Options{Session: fmt.Sprintf("bench-%d", os.Getpid()), Capacity: capacity})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

func rate(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// small is a typical small task result.
type small struct {
	Step   int
	Reward float64
	Done   bool
	Info   string
}

var smallValue = small{Step: 12, Reward: 1.5, Info: "ok"}

// ids makes object ids up front so that the loops time the store alone.
func ids(n int) []objstore.ID {
	out := make([]objstore.ID, n)
	for i := range out {
		out[i] = objstore.ID("0123456789abcdef" + strconv.Itoa(i))
	}
	return out
}

// BenchmarkStorePutSmall: put (inline tier) and release one small object.
func BenchmarkStorePutSmall(b *testing.B) {
	s := open(b, 1<<30)
	data, _ := codec.Marshal(smallValue)
	id := ids(b.N)
	b.ResetTimer()
	for i := range b.N {
		if err := s.PutInline(id[i], data); err != nil {
			b.Fatal(err)
		}
		_ = s.Release(id[i])
	}
	rate(b)
}

// BenchmarkStorePutSmallEncoded: the codec's Marshal plus the store's put
// and release, the whole cost of a small driver-side Put.
func BenchmarkStorePutSmallEncoded(b *testing.B) {
	s := open(b, 1<<30)
	id := ids(b.N)
	b.ResetTimer()
	for i := range b.N {
		data, err := codec.Marshal(smallValue)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.PutInline(id[i], data); err != nil {
			b.Fatal(err)
		}
		_ = s.Release(id[i])
	}
	rate(b)
}

// BenchmarkStorePutSmallFile: a small object through a shared-memory file
// (create, map, write, seal, release): what inlining avoids.
func BenchmarkStorePutSmallFile(b *testing.B) {
	s := open(b, 1<<30)
	data, _ := codec.Marshal(smallValue)
	id := ids(b.N)
	b.ResetTimer()
	for i := range b.N {
		w, err := s.Create(id[i], int64(len(data)))
		if err != nil {
			b.Fatal(err)
		}
		copy(w.Bytes(), data)
		if err := w.Seal(); err != nil {
			b.Fatal(err)
		}
		_ = s.Release(id[i])
	}
	rate(b)
}

// BenchmarkStoreGetSmall: get (pin) and unpin a small object.
func BenchmarkStoreGetSmall(b *testing.B) {
	s := open(b, 1<<30)
	data, _ := codec.Marshal(smallValue)
	if err := s.PutInline("x", data); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := s.Get("x"); err != nil {
			b.Fatal(err)
		}
		_ = s.Unpin("x")
	}
	rate(b)
}

// BenchmarkStoreGetSmallDecoded: Get plus the codec's Unmarshal.
func BenchmarkStoreGetSmallDecoded(b *testing.B) {
	s := open(b, 1<<30)
	data, _ := codec.Marshal(smallValue)
	if err := s.PutInline("x", data); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		buf, err := s.Get("x")
		if err != nil {
			b.Fatal(err)
		}
		var v small
		if err := codec.Unmarshal(buf, &v); err != nil {
			b.Fatal(err)
		}
		_ = s.Unpin("x")
	}
	rate(b)
}

func BenchmarkCodecMarshalSmall(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		if _, err := codec.Marshal(smallValue); err != nil {
			b.Fatal(err)
		}
	}
	rate(b)
}

func BenchmarkCodecUnmarshalSmall(b *testing.B) {
	data, _ := codec.Marshal(smallValue)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		var v small
		if err := codec.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
	}
	rate(b)
}

const bigBytes = 100 << 20

func bigArray() []float64 {
	a := make([]float64, bigBytes/8)
	for i := range a {
		a[i] = float64(i)
	}
	return a
}

// BenchmarkPut100MiB: encode a 100 MiB float64 array straight into a new
// shared-memory object, seal it, and release it, in steady state (as in a
// training loop that puts new weights each iteration): the pages freed by
// the previous put are reused. BenchmarkPut100MiBFresh times the first put.
func BenchmarkPut100MiB(b *testing.B) {
	s := open(b, 1<<30)
	a := bigArray()
	id := ids(b.N + 1)
	putBig(b, s, "warmup", a)
	b.SetBytes(bigBytes)
	b.ResetTimer()
	for i := range b.N {
		putBig(b, s, id[i], a)
	}
}

// BenchmarkPut100MiBFresh: a put that must allocate new shared-memory
// pages (each iteration uses a new store).
func BenchmarkPut100MiBFresh(b *testing.B) {
	a := bigArray()
	b.SetBytes(bigBytes)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		s, err := objstore.Open(objstore.Options{Session: fmt.Sprintf("bench-fresh-%d", os.Getpid()), Capacity: 1 << 30})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		putBig(b, s, "x", a)
		b.StopTimer()
		_ = s.Close()
		b.StartTimer()
	}
}

func putBig(b *testing.B, s *objstore.Store, id objstore.ID, a []float64) {
	b.Helper()
	enc, err := codec.Prepare(a)
	if err != nil {
		b.Fatal(err)
	}
	w, err := s.Create(id, int64(enc.Size()))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := enc.EncodeTo(w.Bytes()); err != nil {
		b.Fatal(err)
	}
	if err := w.Seal(); err != nil {
		b.Fatal(err)
	}
	_ = s.Release(id)
}

// BenchmarkMemcpy100MiB: the physical limit, copying 100 MiB between two
// buffers already in memory.
func BenchmarkMemcpy100MiB(b *testing.B) {
	a := bigArray()
	dst := make([]float64, len(a))
	copy(dst, a)
	b.SetBytes(bigBytes)
	b.ResetTimer()
	for range b.N {
		copy(dst, a)
	}
}

// BenchmarkGetZeroCopy: get of an object of each size, decoded (header
// only; the array is not copied): by a worker mapping it afresh (Map, then
// unmap), by a worker through a Reader that already has it mapped, and by
// the owner (Store.Get).
func BenchmarkGetZeroCopy(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20, 100 << 20} {
		b.Run(fmt.Sprintf("worker-%dKiB", size>>10), func(b *testing.B) {
			s := open(b, 1<<30)
			putArray(b, s, "obj", size)
			var get, unmap time.Duration
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				m, err := objstore.Map(s.Dir(), "obj")
				if err != nil {
					b.Fatal(err)
				}
				var a []float64
				if err := codec.DecodeZeroCopy(m.Bytes(), &a); err != nil || len(a) != size/8 {
					b.Fatal(err)
				}
				t1 := time.Now()
				_ = m.Close()
				get += t1.Sub(t0)
				unmap += time.Since(t1)
			}
			// ns/op includes the unmap a worker does after its task; the
			// get itself (map + decode, until the slice is usable) is
			// reported separately.
			b.ReportMetric(float64(get.Nanoseconds())/float64(b.N), "get-ns/op")
			b.ReportMetric(float64(unmap.Nanoseconds())/float64(b.N), "unmap-ns/op")
		})
		b.Run(fmt.Sprintf("worker-cached-%dKiB", size>>10), func(b *testing.B) {
			s := open(b, 1<<30)
			putArray(b, s, "obj", size)
			r := objstore.NewReader(s.Dir(), 16)
			defer r.Close()
			b.ResetTimer()
			for range b.N {
				v, err := r.Get("obj")
				if err != nil {
					b.Fatal(err)
				}
				var a []float64
				if err := codec.DecodeZeroCopy(v.Bytes(), &a); err != nil || len(a) != size/8 {
					b.Fatal(err)
				}
				v.Done()
			}
		})
		b.Run(fmt.Sprintf("owner-%dKiB", size>>10), func(b *testing.B) {
			s := open(b, 1<<30)
			putArray(b, s, "obj", size)
			b.ResetTimer()
			for range b.N {
				buf, err := s.Get("obj")
				if err != nil {
					b.Fatal(err)
				}
				var a []float64
				if err := codec.DecodeZeroCopy(buf, &a); err != nil || len(a) != size/8 {
					b.Fatal(err)
				}
				_ = s.Unpin("obj")
			}
		})
		b.Run(fmt.Sprintf("owner-first-%dKiB", size>>10), func(b *testing.B) {
			// The first Get of each object, which maps it (then release
			// it and put the next, untimed: get-ns/op is the Get itself).
			s := open(b, 1<<30)
			var get time.Duration
			for i := range b.N {
				id := objstore.ID("obj" + strconv.Itoa(i))
				putArray(b, s, id, size)
				t0 := time.Now()
				buf, err := s.Get(id)
				if err != nil {
					b.Fatal(err)
				}
				var a []float64
				if err := codec.DecodeZeroCopy(buf, &a); err != nil || len(a) != size/8 {
					b.Fatal(err)
				}
				get += time.Since(t0)
				_ = s.Unpin(id)
				_ = s.Release(id)
			}
			b.ReportMetric(float64(get.Nanoseconds())/float64(b.N), "get-ns/op")
		})
	}
}

func putArray(b *testing.B, s *objstore.Store, id objstore.ID, size int) {
	b.Helper()
	enc, err := codec.Prepare(make([]float64, size/8))
	if err != nil {
		b.Fatal(err)
	}
	w, err := s.Create(id, int64(enc.Size()))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := enc.EncodeTo(w.Bytes()); err != nil {
		b.Fatal(err)
	}
	if err := w.Seal(); err != nil {
		b.Fatal(err)
	}
}
