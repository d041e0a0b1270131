package task

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/wire"
)

// Keep flags and an actor's own resources survive the wire, and a spec
// without them decodes as before.
func TestSpecKeepAndResRoundTrip(t *testing.T) {
	withRes := &Spec{Kind: KindActorCreate, Func: "A", NumReturns: 1, Args: []Arg{
		{IsRef: true, Keep: true, Ref: [20]byte{1}},
		{Shared: true, Keep: true, Size: 9, Ref: [20]byte{2}},
		{Shared: true, Size: 3, Ref: [20]byte{3}},
		{Data: []byte("x")},
	}}
	withRes.SetOwnRes(&Resources{CPU: 2, GPU: 1, Custom: map[string]float64{"disk": 1.5}})
	method := &Spec{Kind: KindActorMethod, Func: "A.m", NumReturns: 1}
	method.SetActor(ids.TaskID{7})
	method.SetGPUIDs([]int{0, 2})
	for _, s := range []*Spec{
		withRes,
		method,
		{Kind: KindActorCreate, Func: "B", NumReturns: 1},
		{Kind: KindFunc, Func: "f", NumReturns: 2, Args: []Arg{{IsRef: true, Ref: [20]byte{4}}}},
	} {
		d := wire.Dec{B: AppendSpec(nil, s)}
		got := DecodeSpec(&d)
		if d.Err != nil || len(d.B) != 0 {
			t.Fatalf("%s: decode error %v, %d bytes left", s.Func, d.Err, len(d.B))
		}
		if !reflect.DeepEqual(got, s) {
			t.Errorf("%s: round trip gave %+v, want %+v", s.Func, got, s)
		}
	}
}

// A queued task's spec and arguments are sized to fit Go's allocation
// classes (see NewSpec and Arg); a new field that grows them shows here.
func TestSpecSizes(t *testing.T) {
	if got := unsafe.Sizeof(Arg{}); got != 56 {
		t.Errorf("Arg is %d bytes, want 56", got)
	}
	if got := unsafe.Sizeof(Spec{}) + unsafe.Sizeof(Arg{}); got > 128 {
		t.Errorf("a one-argument spec is %d bytes, want at most 128 (a size class)", got)
	}
	for n := range 7 {
		s := NewSpec(n)
		if len(s.Args) != n || cap(s.Args) != n {
			t.Errorf("NewSpec(%d): %d arguments, capacity %d", n, len(s.Args), cap(s.Args))
		}
	}
}

// The rare fields live behind a pointer that copies of a spec share; a
// setter on one copy leaves the other as it was.
func TestSpecRareFieldsCopyOnWrite(t *testing.T) {
	s := NewSpec(1)
	if s.Actor() != (ids.TaskID{}) || s.GPUIDs() != nil || s.OwnRes() != nil {
		t.Fatal("a new spec has rare fields set")
	}
	s.SetActor(ids.TaskID{1})
	s.SetGPUIDs([]int{3})
	c := *s
	c.SetGPUIDs(nil)
	c.SetActor(ids.TaskID{2})
	if s.Actor() != (ids.TaskID{1}) || !reflect.DeepEqual(s.GPUIDs(), []int{3}) {
		t.Fatalf("the original changed with its copy: actor %v, GPUs %v", s.Actor(), s.GPUIDs())
	}
	if c.Actor() != (ids.TaskID{2}) || c.GPUIDs() != nil {
		t.Fatalf("the copy: actor %v, GPUs %v", c.Actor(), c.GPUIDs())
	}
	c.SetActor(ids.TaskID{})
	if c.rare != nil {
		t.Fatal("a spec whose rare fields are all zero still holds them")
	}
}
