package objstore

import (
	"errors"
	"testing"
)

// Adopting an ID the store holds already fails with ErrExists and leaves
// the object readable: the file under that ID is the object's own (a
// worker that delivers a result the driver stored before must not delete
// it).
func TestAdoptExistingKeepsTheObject(t *testing.T) {
	st, err := Open(Options{Dir: t.TempDir(), Capacity: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w, err := st.Create("x", 4096)
	if err != nil {
		t.Fatal(err)
	}
	copy(w.Bytes(), "value")
	if err := w.Seal(); err != nil {
		t.Fatal(err)
	}
	if err := st.Adopt("x"); !errors.Is(err, ErrExists) {
		t.Fatalf("Adopt of a stored object: %v, want ErrExists", err)
	}
	b, err := st.Get("x")
	if err != nil {
		t.Fatalf("Get after a refused Adopt: %v", err)
	}
	if string(b[:5]) != "value" {
		t.Fatalf("Get after a refused Adopt: %q", b[:5])
	}
}
