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
		shapes := [][2]int{{2, tc.h * tc.w * tc.cin}, {g.patch(), tc.cout}, {1, tc.cout}}
		checkGrad(t, gradCase{name: "Conv2D/" + tc.name, shapes: shapes,
			f: func(tp *Tape, x []*Tensor) *Tensor { return tp.Conv2D(x[0], g, x[1], x[2]) }}, 3)
		checkGrad(t, gradCase{name: "Conv2DRelu/" + tc.name, shapes: shapes,
			f: func(tp *Tape, x []*Tensor) *Tensor { return tp.Conv2DRelu(x[0], g, x[1], x[2]) }}, 4)
	}
}

// TestConv2DReluMatchesUnfused checks the fused activation against Relu
// applied to Conv2D, values and all three gradients, on a batch big enough
// to take every kernel path.
func TestConv2DReluMatchesUnfused(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	g, err := NewConvGeom(11, 9, 3, 4, 4, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	const batch, cout = 5, 19
	p := NewParams()
	x, k, b := p.New("x", batch, 11*9*3), p.New("k", g.patch(), cout), p.New("b", 1, cout)
	for i := range p.Flat() {
		p.Flat()[i] = rng.NormFloat64()
	}
	w := make([]float64, batch*g.OH*g.OW*cout)
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	run := func(fused bool) (out, grads []float64) {
		tape := NewTape()
		var y *Tensor
		if fused {
			y = tape.Conv2DRelu(x, g, k, b)
		} else {
			y = tape.Relu(tape.Conv2D(x, g, k, b))
		}
		out = append([]float64(nil), y.Data...)
		p.ZeroGrad()
		tape.Backward(tape.Sum(tape.Mul(y, tape.Const(y.Rows, y.Cols, w))))
		return out, p.GetFlatGrad(nil)
	}
	y1, g1 := run(false)
	y2, g2 := run(true)
	for i := range y1 {
		if y1[i] != y2[i] {
			t.Fatalf("output %d: fused %v, unfused %v", i, y2[i], y1[i])
		}
	}
	for i := range g1 {
		if !near(g1[i], g2[i], 1e-12) {
			t.Fatalf("gradient %d: fused %v, unfused %v", i, g2[i], g1[i])
		}
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
	opts.ConvFloat64 = true // the reference path, checked to float64 precision
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
}

// TestDefaultConvFilters checks the catalog's stacks for 84×84 and 42×42
// images (each ends in 1×1×256) and that other sizes get an error naming
// conv_filters with a stack that does fit.
func TestDefaultConvFilters(t *testing.T) {
	for _, tc := range []struct {
		shape []int
		want  string
	}{
		{[]int{84, 84, 4}, `[[16,[8,8],4],[32,[4,4],2],[256,[11,11],1,"valid"]]`},
		{[]int{42, 42, 1}, `[[16,[4,4],2],[32,[4,4],2],[256,[11,11],1,"valid"]]`},
	} {
		fs, err := DefaultConvFilters(tc.shape[0], tc.shape[1])
		if err != nil {
			t.Fatal(err)
		}
		if got := filtersString(fs); got != tc.want {
			t.Errorf("%v: filters %s, want %s", tc.shape, got, tc.want)
		}
		m, err := NewModel(tc.shape, 6, ModelOptions{Hiddens: []int{}, Init: InitNameNormc}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if c := m.(*ConvNet); c.fc.in != 256 {
			t.Errorf("%v: %d features, want 256 (1x1x256)", tc.shape, c.fc.in)
		}
	}
	for _, shape := range [][]int{{80, 80, 1}, {30, 20, 3}, {5, 3, 2}} {
		_, err := NewModel(shape, 2, DefaultModelOptions(), 1)
		suggest := SuggestConvFilters(shape[0], shape[1])
		if err == nil || !strings.Contains(err.Error(), "conv_filters") || !strings.Contains(err.Error(), filtersString(suggest)) {
			t.Fatalf("%v: error %v, want one naming conv_filters and suggesting %s", shape, err, filtersString(suggest))
		}
		// The suggested stack builds, and ends in 1×1×256.
		m, err := NewModel(shape, 2, ModelOptions{ConvFilters: suggest, Init: InitNameNormc}, 1)
		if err != nil {
			t.Fatalf("%v: suggested filters: %v", shape, err)
		}
		if c := m.(*ConvNet); c.fc.in != 256 {
			t.Errorf("%v: suggested filters give %d features, want 256", shape, c.fc.in)
		}
	}
}

// TestConvFiltersThatDoNotFit checks that filters which cannot run on the
// observations fail when the model is built, naming conv_filters, the
// layer, and what would fit.
func TestConvFiltersThatDoNotFit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		shape   []int
		filters string
		want    []string
	}{
		{"84 stack on 42", []int{42, 42, 1}, `[[16,[8,8],4],[32,[4,4],2],[256,[11,11],1,"valid"]]`,
			[]string{"conv_filters[2]", "6x6x32", "at most 6x6", `[256,[6,6],1,"valid"]`}},
		{"valid kernel too wide", []int{10, 4, 1}, `[[8,[3,5],1,"valid"]]`,
			[]string{"conv_filters[0]", "10x4x1", "at most 10x4", `[8,[3,4],1,"valid"]`}},
		{"zero stride", []int{42, 42, 1}, `[[16,[4,4],0]]`, []string{"conv_filters[0]", "must be positive"}},
		{"zero channels", []int{42, 42, 1}, `[[16,[4,4],2],[0,[3,3],1]]`, []string{"conv_filters[1]", "must be positive"}},
		{"vector observations", []int{4}, `[[16,[4,4],2]]`, []string{"conv_filters is set", "not images"}},
	} {
		opts := DefaultModelOptions()
		if err := json.Unmarshal([]byte(`{"conv_filters": `+tc.filters+`}`), &opts); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		_, err := NewModel(tc.shape, 2, opts, 1)
		if err == nil {
			t.Fatalf("%s: no error", tc.name)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", tc.name, err, w)
			}
		}
	}
}

// directConv is the textbook convolution sum, the reference for Conv2D.
func directConv(g ConvGeom, batch, cout int, x, k, bias []float64) []float64 {
	out := make([]float64, batch*g.OH*g.OW*cout)
	for b := 0; b < batch; b++ {
		for oy := 0; oy < g.OH; oy++ {
			for ox := 0; ox < g.OW; ox++ {
				for co := 0; co < cout; co++ {
					s := bias[co]
					for ky := 0; ky < g.KH; ky++ {
						for kx := 0; kx < g.KW; kx++ {
							iy, ix := oy*g.Stride+ky-g.PadTop, ox*g.Stride+kx-g.PadLeft
							if iy < 0 || iy >= g.H || ix < 0 || ix >= g.W {
								continue
							}
							for c := 0; c < g.Cin; c++ {
								s += x[b*g.H*g.W*g.Cin+(iy*g.W+ix)*g.Cin+c] * k[((ky*g.KW+kx)*g.Cin+c)*cout+co]
							}
						}
					}
					out[((b*g.OH+oy)*g.OW+ox)*cout+co] = s
				}
			}
		}
	}
	return out
}

// TestConv2DChunks covers convolutions that Conv2D unfolds a few images at
// a time and ones whose kernel covers the whole image (no unfolding, and
// the transposed product for the input gradient): outputs against the
// textbook sum, and sampled gradients of input, kernel and bias against
// finite differences of that sum.
func TestConv2DChunks(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		h, w, cin, kh, kw, str int
		same                   bool
		batch, cout            int
		wantChunk              int
	}{
		{"one image per chunk", 20, 20, 8, 5, 5, 2, true, 3, 9, 1},
		{"two images per chunk", 16, 14, 6, 4, 3, 1, true, 5, 7, 2},
		{"whole image, wide kernel", 6, 5, 4, 6, 5, 1, false, 3, 40, 3},
		{"whole image, narrow kernel", 4, 4, 2, 4, 4, 1, false, 9, 3, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewConvGeom(tc.h, tc.w, tc.cin, tc.kh, tc.kw, tc.str, tc.same)
			if err != nil {
				t.Fatal(err)
			}
			if got := g.chunkImages(tc.batch); got != tc.wantChunk && !g.whole() {
				t.Fatalf("%d images per chunk, want %d", got, tc.wantChunk)
			}
			rng := rand.New(rand.NewPCG(7, uint64(tc.cout)))
			p := NewParams()
			x := p.New("x", tc.batch, tc.h*tc.w*tc.cin)
			k := p.New("k", g.patch(), tc.cout)
			b := p.New("b", 1, tc.cout)
			for i := range p.Flat() {
				p.Flat()[i] = rng.NormFloat64()
			}
			wts := make([]float64, tc.batch*g.OH*g.OW*tc.cout)
			for i := range wts {
				wts[i] = rng.NormFloat64()
			}
			tape := NewTape()
			out := tape.Conv2D(x, g, k, b)
			want := directConv(g, tc.batch, tc.cout, x.Data, k.Data, b.Data)
			for i := range want {
				if !near(out.Data[i], want[i], 1e-10) {
					t.Fatalf("out[%d] = %v, want %v", i, out.Data[i], want[i])
				}
			}
			p.ZeroGrad()
			tape.Backward(tape.Sum(tape.Mul(out, tape.Const(out.Rows, out.Cols, wts))))
			loss := func() float64 {
				s := 0.0
				for i, v := range directConv(g, tc.batch, tc.cout, x.Data, k.Data, b.Data) {
					s += v * wts[i]
				}
				return s
			}
			w, grad := p.Flat(), p.Grads()
			for n := 0; n < 40; n++ {
				i := rng.IntN(len(w))
				orig := w[i]
				w[i] = orig + 1e-5
				up := loss()
				w[i] = orig - 1e-5
				down := loss()
				w[i] = orig
				if num := (up - down) / 2e-5; !near(grad[i], num, 1e-6) {
					name, at := p.locate(i)
					t.Fatalf("d/d%s[%d]: analytic %v, numeric %v", name, at, grad[i], num)
				}
			}
		})
	}
}
