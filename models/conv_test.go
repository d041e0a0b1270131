package models

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func TestConv2DGradients(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		h, w, cin, kh, kw, str int
		same                   bool
		cout                   int
	}{
		{"valid/stride1", 4, 5, 2, 3, 2, 1, false, 3},
		{"same/stride2", 5, 5, 2, 3, 3, 2, true, 3},
		{"same/1x1", 3, 3, 1, 1, 1, 1, true, 2},
		{"same/bigkernel", 4, 3, 1, 5, 4, 2, true, 2},
	} {
		g, err := NewConvGeom(tc.h, tc.w, tc.cin, tc.kh, tc.kw, tc.str, tc.same)
		if err != nil {
			t.Fatal(err)
		}
		checkGrad(t, gradCase{name: "Conv2D/" + tc.name, shapes: [][2]int{{2, tc.h * tc.w * tc.cin}, {g.patch(), tc.cout}, {1, tc.cout}},
			f: func(tp *Tape, x []*Tensor) *Tensor { return tp.Conv2D(x[0], g, x[1], x[2]) }}, 3)
	}
}

// TestConv2DMatchesDirectConvolution compares with the textbook sum.
func TestConv2DMatchesDirectConvolution(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	g, _ := NewConvGeom(6, 5, 2, 3, 3, 2, true)
	const cout = 4
	x := make([]float64, 2*6*5*2)
	k := make([]float64, g.patch()*cout)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	for i := range k {
		k[i] = rng.NormFloat64()
	}
	tape := NewTape()
	out := tape.Conv2D(tape.Const(2, len(x)/2, x), g, tape.Const(g.patch(), cout, k), nil)
	if g.OH != 3 || g.OW != 3 || out.Cols != 3*3*cout {
		t.Fatalf("output %dx%d, tensor %s", g.OH, g.OW, out.shape())
	}
	for b := 0; b < 2; b++ {
		for oy := 0; oy < g.OH; oy++ {
			for ox := 0; ox < g.OW; ox++ {
				for co := 0; co < cout; co++ {
					s := 0.0
					for ky := 0; ky < 3; ky++ {
						for kx := 0; kx < 3; kx++ {
							iy, ix := oy*2+ky-g.PadTop, ox*2+kx-g.PadLeft
							if iy < 0 || iy >= 6 || ix < 0 || ix >= 5 {
								continue
							}
							for c := 0; c < 2; c++ {
								s += x[b*60+(iy*5+ix)*2+c] * k[((ky*3+kx)*2+c)*cout+co]
							}
						}
					}
					if got := out.Data[b*out.Cols+(oy*g.OW+ox)*cout+co]; !near(got, s, 1e-12) {
						t.Fatalf("out[%d,%d,%d,%d] = %v, want %v", b, oy, ox, co, got, s)
					}
				}
			}
		}
	}
}

func TestConvNetFromCatalog(t *testing.T) {
	opts := DefaultModelOptions()
	if err := json.Unmarshal([]byte(`{"conv_filters": [[4, [3, 3], 2], [8, [2, 2], 1, "valid"]], "fcnet_hiddens": [16], "fcnet_activation": "relu"}`), &opts); err != nil {
		t.Fatal(err)
	}
	want := []ConvFilter{{4, 3, 3, 2, false}, {8, 2, 2, 1, true}}
	if !reflect.DeepEqual(opts.ConvFilters, want) {
		t.Fatalf("filters %+v", opts.ConvFilters)
	}
	if b, _ := json.Marshal(opts.ConvFilters); string(b) != `[[4,[3,3],2],[8,[2,2],1,"valid"]]` {
		t.Fatalf("filters marshal to %s", b)
	}
	opts.Value = true
	m, err := NewModel([]int{7, 7, 2}, 3, opts, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(*ConvNet); !ok {
		t.Fatalf("image observations got %T", m)
	}
	// 7x7x2 → same/2 → 4x4x4 → valid 2x2 → 3x3x8 = 72 features → 16 → 3.
	wantParams := (3*3*2*4 + 4) + (2*2*4*8 + 8) + (72*16 + 16) + (16*3 + 3) + (72*16 + 16) + (16 + 1)
	if m.Params().Len() != wantParams {
		t.Fatalf("%d parameters, want %d: %s", m.Params().Len(), wantParams, m.Params().Signature())
	}
	tape := NewTape()
	o := m.Forward(tape, tape.Const(2, 98, nil))
	if o.Out.Cols != 3 || o.Value.Cols != 1 {
		t.Fatalf("outputs %s, value %s", o.Out.shape(), o.Value.shape())
	}
	// The whole network's gradients, through convolutions, match finite differences.
	rng := rand.New(rand.NewPCG(6, 6))
	obs := make([]float64, 2*98)
	for i := range obs {
		obs[i] = rng.NormFloat64()
	}
	loss := func() *Tensor {
		tape.Reset()
		o := m.Forward(tape, tape.Const(2, 98, obs))
		return tape.Add(tape.Sum(tape.Square(o.Out)), tape.Sum(o.Value))
	}
	p := m.Params()
	p.ZeroGrad()
	tape.Backward(loss())
	analytic := p.GetFlatGrad(nil)
	w := p.Flat()
	for i := 0; i < len(w); i += 7 {
		orig := w[i]
		w[i] = orig + 1e-6
		up := loss().Item()
		w[i] = orig - 1e-6
		down := loss().Item()
		w[i] = orig
		if num := (up - down) / 2e-6; !near(analytic[i], num, 1e-5) {
			t.Fatalf("parameter %d: analytic %v numeric %v", i, analytic[i], num)
		}
	}
	for _, bad := range []string{`{"conv_filters": [[4, [3], 2]]}`, `{"conv_filters": [[4, [3, 3], 2, "full"]]}`, `{"conv_filters": [4]}`} {
		o := DefaultModelOptions()
		if err := json.Unmarshal([]byte(bad), &o); err == nil || !strings.Contains(err.Error(), "conv filter") {
			t.Errorf("%s: error %v", bad, err)
		}
	}
	if _, err := NewModel([]int{3, 3, 1}, 2, ModelOptions{ConvFilters: []ConvFilter{{4, 5, 5, 1, true}}}, 1); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Fatalf("oversized kernel: %v", err)
	}
	// RLlib's 84×84 stack ends in 1×1×512.
	big, err := NewConvNet([]int{84, 84, 1}, 2, ModelOptions{Hiddens: []int{}, Init: InitNameNormc}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if big.fc.in != 512 {
		t.Fatalf("84x84 features %d, want 512", big.fc.in)
	}
}
