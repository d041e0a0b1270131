package transfer

import (
	"context"
	"testing"
	"unsafe"

	"github.com/gray-ml/gray/runtime/codec"
)

// TestFetchedArrayDecodesZeroCopy: an array fetched into a StoreSink is
// read back through the receiving store without a copy, as the root
// package's Get reads shared-memory values: the decoded slice points into
// the store's mapping of the object.
func TestFetchedArrayDecodesZeroCopy(t *testing.T) {
	type value struct {
		Name    string
		Weights []float64
		Counts  []int32
	}
	in := value{Name: "w", Weights: make([]float64, 300_000), Counts: []int32{1, 2, 3}}
	for i := range in.Weights {
		in.Weights[i] = float64(i) / 3
	}
	enc, err := codec.Prepare(in)
	if err != nil {
		t.Fatal(err)
	}
	src, dst := openStore(t, 16<<20), openStore(t, 16<<20)
	id := objectID(42)
	w, err := src.Create(storeID(id), int64(enc.Size()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := enc.EncodeTo(w.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := w.Seal(); err != nil {
		t.Fatal(err)
	}

	if err := newClient(t).Fetch(context.Background(), serve(t, StoreSource(src)), ObjectKey(id), StoreSink(dst)); err != nil {
		t.Fatal(err)
	}
	buf, err := dst.Get(storeID(id))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Unpin(storeID(id))
	if !codec.IsZeroCopy(buf) {
		t.Fatal("the fetched object is not in the zero-copy format")
	}
	var out value
	if err := codec.DecodeZeroCopy(buf, &out); err != nil {
		t.Fatal(err)
	}
	if out.Name != in.Name || len(out.Weights) != len(in.Weights) || out.Weights[299_999] != in.Weights[299_999] || out.Counts[2] != 3 {
		t.Fatalf("decoded value differs: %q, %d weights", out.Name, len(out.Weights))
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	hi := lo + uintptr(len(buf))
	for name, p := range map[string]uintptr{
		"Weights": uintptr(unsafe.Pointer(unsafe.SliceData(out.Weights))),
		"Counts":  uintptr(unsafe.Pointer(unsafe.SliceData(out.Counts))),
	} {
		if p < lo || p >= hi {
			t.Errorf("%s was copied: it does not point into the store's mapping of the fetched object", name)
		}
	}
}
