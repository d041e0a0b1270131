package wire

import (
	"bufio"
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gray-ml/gray/envs"
	pb "github.com/gray-ml/gray/plugins/proto"
)

func TestSpacesRoundTrip(t *testing.T) {
	for _, s := range []envs.Space{
		envs.Discrete{N: 3},
		envs.NewBox(-1, 1, 2, 3),
		envs.NewBoxBounds([]float64{math.Inf(-1), 0}, []float64{math.Inf(1), 5}),
	} {
		p, err := SpaceToProto(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := SpaceFromProto(p)
		if err != nil {
			t.Fatal(err)
		}
		if back.String() != s.String() || back.Size() != s.Size() {
			t.Errorf("%s came back as %s", s, back)
		}
	}
}

func TestBadSpacesFromPlugins(t *testing.T) {
	box := func(low, high []float64, shape ...int64) *pb.Space {
		return &pb.Space{Kind: &pb.Space_Box{Box: &pb.Box{Low: low, High: high, Shape: shape}}}
	}
	cases := []struct {
		name  string
		space *pb.Space
		want  string
	}{
		{"missing", nil, "space is missing"},
		{"empty discrete", &pb.Space{Kind: &pb.Space_Discrete{Discrete: &pb.Discrete{N: 0}}}, "Discrete space with 0 elements"},
		{"bounds differ", box([]float64{0}, []float64{1, 2}), "1 low bounds but 2 high bounds"},
		{"shape mismatch", box([]float64{0, 0}, []float64{1, 1}, 3), "holds 3 values, but 2 bounds"},
		{"negative dim", box([]float64{0}, []float64{1}, -1), "dimensions must be positive"},
		{"low above high", box([]float64{2}, []float64{1}, 1), "bounds [2, 1] in dimension 0"},
		{"NaN bound", box([]float64{math.NaN()}, []float64{1}, 1), "bounds [NaN, 1]"},
	}
	for _, c := range cases {
		_, err := SpaceFromProto(c.space)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestFastFramesRoundTrip sends a step's outcome from rows, as the SDK
// does, and decodes it as the host does, and a request into a reused
// buffer.
func TestFastFramesRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := FastWriter{W: &buf}
	r := FastReader{R: bufio.NewReader(&buf)}
	obs := [][]float64{{1, 2}, {3, 4}, {5, 6}}
	final := [][]float64{nil, {7, 8}, nil}
	if err := w.WriteAnswerRows(obs, []float64{0.5, -1, 2}, []bool{false, true, false}, []bool{false, false, true}, final); err != nil {
		t.Fatal(err)
	}
	var a FastAnswer
	if err := r.ReadAnswerInto(&a); err != nil {
		t.Fatal(err)
	}
	want := FastAnswer{
		Obs: []float64{1, 2, 3, 4, 5, 6}, Rewards: []float64{0.5, -1, 2}, Final: []float64{7, 8},
		Terminated: []bool{false, true, false}, Truncated: []bool{false, false, true},
	}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("decoded %+v, want %+v", a, want)
	}
	if err := w.WriteError("boom"); err != nil {
		t.Fatal(err)
	}
	var se *ErrFastStep
	if err := r.ReadAnswerInto(&a); !errors.As(err, &se) || se.Msg != "boom" {
		t.Errorf("error frame decoded as %v, want ErrFastStep boom", err)
	}
	reuse := make([]float64, 0, 8)
	for _, acts := range [][]float64{{1, 2, 3}, {4}} {
		if err := w.WriteRequest(acts); err != nil {
			t.Fatal(err)
		}
		got, err := r.ReadRequestInto(reuse)
		if err != nil || !reflect.DeepEqual(got, acts) || &got[0] != &reuse[:1][0] {
			t.Errorf("ReadRequestInto = %v, %v; want %v in the given buffer", got, err, acts)
		}
	}
}
