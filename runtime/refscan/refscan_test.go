package refscan_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/refscan"
)

// ref stands for gray.Ref: a struct implementing the reference interface,
// of which only valid ones name an object.
type ref struct {
	id    byte
	valid bool
}

func (r ref) ObjectID() ids.ObjectID { return ids.ObjectID{r.id} }

type named interface{ ObjectID() ids.ObjectID }

type holder struct {
	R      ref
	Many   []ref
	hidden ref // unexported: the codec does not encode it
}

type list struct {
	R    ref
	Next *list
}

func newScanner() *refscan.Scanner {
	return refscan.New(reflect.TypeFor[named](), func(v any) (ids.ObjectID, bool) {
		r := v.(ref)
		return r.ObjectID(), r.valid
	})
}

func TestFind(t *testing.T) {
	s := newScanner()
	a, b, c := ref{1, true}, ref{2, true}, ref{3, true}
	for _, tc := range []struct {
		name string
		v    any
		want []byte
	}{
		{"nil", nil, nil},
		{"number", 3.5, nil},
		{"numeric slice", []float64{1, 2}, nil},
		{"a ref", a, []byte{1}},
		{"an invalid ref", ref{4, false}, nil},
		{"struct fields", holder{R: a, Many: []ref{b, c}, hidden: ref{9, true}}, []byte{1, 2, 3}},
		{"pointer", &holder{R: b}, []byte{2}},
		{"map keys and values", map[ref]ref{a: b}, []byte{1, 2}},
		{"interfaces", []any{1, "x", c}, []byte{3}},
		{"recursive type", &list{R: a, Next: &list{R: b}}, []byte{1, 2}},
	} {
		var want []ids.ObjectID
		for _, id := range tc.want {
			want = append(want, ids.ObjectID{id})
		}
		got := s.Find(tc.v)
		slices.SortFunc(got, func(x, y ids.ObjectID) int { return int(x[0]) - int(y[0]) })
		if !slices.Equal(got, want) {
			t.Errorf("%s: Find = %v, want %v", tc.name, got, want)
		}
	}
}

// A value deeper than MaxDepth is not walked past it.
func TestFindStopsAtMaxDepth(t *testing.T) {
	s := newScanner()
	deep := &list{R: ref{7, true}}
	for range refscan.MaxDepth {
		deep = &list{Next: deep}
	}
	if got := s.Find(deep); len(got) != 0 {
		t.Fatalf("Find past MaxDepth = %v, want none", got)
	}
	if got := s.Find(&list{Next: &list{R: ref{7, true}}}); len(got) != 1 {
		t.Fatalf("Find on a shallow list = %v, want one", got)
	}
}
