package wire

import (
	"math"
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
