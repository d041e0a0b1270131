package task

import (
	"reflect"
	"testing"

	"github.com/gray-ml/gray/runtime/wire"
)

// Keep flags and an actor's own resources survive the wire, and a spec
// without them decodes as before.
func TestSpecKeepAndResRoundTrip(t *testing.T) {
	for _, s := range []*Spec{
		{Kind: KindActorCreate, Func: "A", NumReturns: 1, Args: []Arg{
			{IsRef: true, Keep: true, Ref: [20]byte{1}},
			{Shared: true, Keep: true, Size: 9, Ref: [20]byte{2}},
			{Shared: true, Size: 3, Ref: [20]byte{3}},
			{Data: []byte("x")},
		}, Res: &Resources{CPU: 2, GPU: 1, Custom: map[string]float64{"disk": 1.5}}},
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
