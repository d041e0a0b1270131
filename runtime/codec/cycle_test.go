package codec

import (
	"strings"
	"testing"
)

type listNode struct {
	V    int
	Next *listNode
}

type tree struct {
	Kids []*tree
	Attr map[string]*tree
}

type holder struct {
	Name string
	List *listNode
}

func TestCyclesAreErrorsNotStackOverflows(t *testing.T) {
	self := &listNode{V: 1}
	self.Next = self
	ring := &listNode{V: 1, Next: &listNode{V: 2}}
	ring.Next.Next = ring
	loopMap := &tree{Attr: map[string]*tree{}}
	loopMap.Attr["me"] = loopMap
	loopSlice := &tree{}
	loopSlice.Kids = []*tree{{}, loopSlice}
	anySlice := []any{1, nil}
	anySlice[1] = anySlice
	cases := []struct {
		name string
		v    any
	}{
		{"pointer to itself", self},
		{"ring of two", ring},
		{"value holding a ring", listNode{V: 0, Next: ring}},
		{"struct field holding a cycle", holder{Name: "h", List: self}},
		{"through a map", loopMap},
		{"through a slice", loopSlice},
		{"in an interface", []any{"x", self}},
		{"slice of any holding itself", anySlice},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err1 := Marshal(c.v)
			_, err2 := Prepare(c.v)
			for _, err := range []error{err1, err2} {
				if err == nil || !(strings.Contains(err.Error(), "cycl") || strings.Contains(err.Error(), "refers to itself")) {
					t.Errorf("err = %v, want one saying the value is cyclic", err)
				}
			}
		})
	}
}

func TestSharedButAcyclicValuesEncode(t *testing.T) {
	leaf := &tree{}
	dag := &tree{Kids: []*tree{leaf, leaf}, Attr: map[string]*tree{"a": leaf, "b": leaf}}
	list := &listNode{V: 1, Next: &listNode{V: 2, Next: &listNode{V: 3}}}
	for _, v := range []any{dag, list, holder{List: list}, []any{list, list}} {
		b, err := Marshal(v)
		if err != nil {
			t.Fatalf("Marshal(%T): %v", v, err)
		}
		if _, err := Prepare(v); err != nil {
			t.Fatalf("Prepare(%T): %v", v, err)
		}
		var back listNode
		if l, ok := v.(*listNode); ok {
			if err := Unmarshal(b, &back); err != nil || back.Next.Next.V != l.Next.Next.V {
				t.Fatalf("round trip: %v %+v", err, back)
			}
		}
	}
}

func BenchmarkMarshalAcyclic(b *testing.B) {
	type flat struct {
		A, B int
		S    string
		F    []float64
	}
	list := &listNode{V: 1, Next: &listNode{V: 2, Next: &listNode{V: 3}}}
	for _, c := range []struct {
		name string
		v    any
	}{{"flat", flat{A: 1, B: 2, S: "x", F: make([]float64, 8)}}, {"list3", list}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Marshal(c.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
