package models

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gray-ml/gray/spaces"
)

func TestActionDistFor(t *testing.T) {
	for _, tc := range []struct {
		space     spaces.Space
		distType  string
		name      string
		in, act   int
		wantError string
	}{
		{spaces.Discrete{N: 2}, "", "Categorical", 2, 1, ""},
		{spaces.Discrete{N: 5}, DistCategorical, "Categorical", 5, 1, ""},
		{spaces.NewBox(-2, 2, 1), "", "DiagGaussian", 2, 1, ""},
		{spaces.NewBox(-1, 1, 3), DistDiagGaussian, "DiagGaussian", 6, 3, ""},
		{spaces.NewBox(-1, 1, 3), DistDeterministic, "Deterministic", 3, 3, ""},
		{spaces.NewBox(-1, 1, 2, 2), "", "DiagGaussian", 8, 4, ""},
		{spaces.Discrete{N: 2}, DistDiagGaussian, "", 0, 0, "does not fit"},
		{spaces.NewBox(-1, 1, 1), "beta", "", 0, 0, "does not fit"},
		{spaces.Discrete{N: 0}, "", "", 0, 0, "no actions"},
	} {
		t.Run(fmt.Sprint(tc.space, tc.distType), func(t *testing.T) {
			d, err := ActionDistFor(tc.space, tc.distType)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Name() != tc.name || d.InputSize() != tc.in || d.ActionSize() != tc.act {
				t.Fatalf("got %s in=%d act=%d, want %s in=%d act=%d", d.Name(), d.InputSize(), d.ActionSize(), tc.name, tc.in, tc.act)
			}
		})
	}
}

func TestNewPolicyForSpaces(t *testing.T) {
	for _, tc := range []struct {
		obs, act   spaces.Space
		opts       ModelOptions
		inputs     int
		outputs    int
		wantParams int
	}{
		// 4-64-64-2 policy + 4-64-64-1 value network.
		{spaces.NewBox(-1, 1, 4), spaces.Discrete{N: 2}, ModelOptions{Hiddens: []int{64, 64}, Value: true}, 4, 2,
			(4*64 + 64) + (64*64 + 64) + (64*2 + 2) + (4*64 + 64) + (64*64 + 64) + (64 + 1)},
		// Free log std: head has 1 output plus a 1-value log std; shared value head.
		{spaces.NewBox(-8, 8, 3), spaces.NewBox(-2, 2, 1), ModelOptions{Hiddens: []int{16}, FreeLogStd: true, Value: true, VFShareLayers: true}, 3, 2,
			(3*16 + 16) + (16*1 + 1) + 1 + (16 + 1)},
		// One-hot observations.
		{spaces.Discrete{N: 6}, spaces.Discrete{N: 3}, ModelOptions{Hiddens: []int{8}}, 6, 3, (6*8 + 8) + (8*3 + 3)},
	} {
		p, err := NewPolicy("test-env", tc.obs, tc.act, "", tc.opts, 1)
		if err != nil {
			t.Fatal(err)
		}
		if p.Model.NumInputs() != tc.inputs || p.Model.NumOutputs() != tc.outputs || p.Model.Params().Len() != tc.wantParams {
			t.Fatalf("%v→%v: inputs %d outputs %d params %d; want %d %d %d", tc.obs, tc.act,
				p.Model.NumInputs(), p.Model.NumOutputs(), p.Model.Params().Len(), tc.inputs, tc.outputs, tc.wantParams)
		}
		tape := NewTape()
		o := p.Model.Forward(tape, tape.Const(5, tc.inputs, nil))
		if o.Out.Rows != 5 || o.Out.Cols != tc.outputs || (tc.opts.Value && (o.Value == nil || o.Value.Cols != 1)) {
			t.Fatalf("forward shapes out %v value %v", o.Out, o.Value)
		}
	}
}

func TestModelOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		opts ModelOptions
		out  int
		want string
	}{
		{ModelOptions{Hiddens: []int{0}}, 2, "positive"},
		{ModelOptions{Activation: "gelu"}, 2, "tanh or relu"},
		{ModelOptions{Init: "he"}, 2, "orthogonal"},
		{ModelOptions{FreeLogStd: true}, 3, "even"},
		{ModelOptions{}, 0, "positive"},
	} {
		if _, err := NewFullyConnected(4, tc.out, tc.opts, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.opts, err, tc.want)
		}
	}
	o := DefaultModelOptions()
	if err := json.Unmarshal([]byte(`{"fcnet_hiddens": [32], "free_log_std": true}`), &o); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(o.Hiddens, []int{32}) || !o.FreeLogStd || o.Activation != "tanh" {
		t.Fatalf("decoded %+v", o)
	}
	if err := json.Unmarshal([]byte(`{"fcnet_hidden": [32]}`), &o); err == nil || !strings.Contains(err.Error(), "fcnet_hidden") {
		t.Fatalf("typo accepted or not named: %v", err)
	}
}

func TestSameSeedSameWeights(t *testing.T) {
	opts := ModelOptions{Hiddens: []int{8, 8}, Value: true}
	a, _ := NewFullyConnected(3, 2, opts, 11)
	b, _ := NewFullyConnected(3, 2, opts, 11)
	c, _ := NewFullyConnected(3, 2, opts, 12)
	if !reflect.DeepEqual(a.Params().Flat(), b.Params().Flat()) {
		t.Fatal("same seed gave different weights")
	}
	if reflect.DeepEqual(a.Params().Flat(), c.Params().Flat()) {
		t.Fatal("different seeds gave the same weights")
	}
}

func TestFlatWeightsRoundTrip(t *testing.T) {
	a, _ := NewFullyConnected(3, 2, ModelOptions{Hiddens: []int{8}, Value: true}, 1)
	b, _ := NewFullyConnected(3, 2, ModelOptions{Hiddens: []int{8}, Value: true}, 2)
	w := a.Params().GetFlat(nil)
	if err := b.Params().SetFlat(w); err != nil {
		t.Fatal(err)
	}
	tape := NewTape()
	obs := []float64{0.1, -0.2, 0.3}
	oa := a.Forward(tape, tape.Const(1, 3, obs))
	outA := append([]float64(nil), oa.Out.Data...)
	ob := b.Forward(tape, tape.Const(1, 3, obs))
	if !reflect.DeepEqual(outA, ob.Out.Data) {
		t.Fatalf("outputs differ after SetFlat: %v vs %v", outA, ob.Out.Data)
	}
	// Gradients ship the same way.
	g := make([]float64, a.Params().Len())
	for i := range g {
		g[i] = float64(i)
	}
	if err := b.Params().SetFlatGrad(g); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b.Params().GetFlatGrad(nil), g) {
		t.Fatal("gradient round trip changed values")
	}
	// The per-tensor views see the flat vector.
	if b.Params().Tensors()[0].Grad[1] != 1 {
		t.Fatal("tensor gradient is not a view of the flat gradient")
	}
	if err := b.Params().SetFlat(w[:3]); err == nil || !strings.Contains(err.Error(), "different model") {
		t.Fatalf("short weights: %v", err)
	}
	if err := b.Params().SetFlatGrad(g[:3]); err == nil {
		t.Fatal("short gradients accepted")
	}
}

func TestPreprocessors(t *testing.T) {
	box := spaces.NewBox(-1, 1, 2, 2)
	p, err := NewPreprocessor(box)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float64, p.Size())
	if err := p.Transform([]float64{1, 2, 3, 4}, dst); err != nil || !reflect.DeepEqual(dst, []float64{1, 2, 3, 4}) || !reflect.DeepEqual(p.Shape(), []int{4}) {
		t.Fatalf("flatten: %v %v %v", dst, p.Shape(), err)
	}
	if err := p.Transform([]float64{1, 2}, dst); err == nil {
		t.Fatal("flatten accepted a short observation")
	}
	if err := p.Transform([]float64{1, math.NaN(), 0, 0}, dst); err == nil {
		t.Fatal("flatten accepted NaN")
	}
	oh, err := NewPreprocessor(spaces.Discrete{N: 4})
	if err != nil {
		t.Fatal(err)
	}
	dst = make([]float64, 4)
	if err := oh.Transform([]float64{2}, dst); err != nil || !reflect.DeepEqual(dst, []float64{0, 0, 1, 0}) {
		t.Fatalf("one-hot: %v %v", dst, err)
	}
	for _, bad := range [][]float64{{4}, {-1}, {1.5}, {1, 2}} {
		if err := oh.Transform(bad, dst); err == nil {
			t.Fatalf("one-hot accepted %v", bad)
		}
	}
}

// scaled is a custom preprocessor that halves a Box observation.
type scaled struct{ n int }

func (s scaled) Shape() []int { return []int{s.n} }
func (s scaled) Size() int    { return s.n }
func (s scaled) Transform(obs, dst []float64) error {
	for i, v := range obs {
		dst[i] = v / 2
	}
	return nil
}

func TestRegisterPreprocessorOverridesDefault(t *testing.T) {
	RegisterPreprocessor("halved-test-env", func(space spaces.Space, _ map[string]any) (Preprocessor, error) {
		return scaled{n: space.Size()}, nil
	})
	RegisterPreprocessor("broken-test-env", func(spaces.Space, map[string]any) (Preprocessor, error) {
		return nil, fmt.Errorf("needs a camera")
	})
	p, err := GetPreprocessor("halved-test-env", spaces.NewBox(-1, 1, 2), nil)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float64, 2)
	_ = p.Transform([]float64{2, 4}, dst)
	if !reflect.DeepEqual(dst, []float64{1, 2}) {
		t.Fatalf("registered preprocessor not used: %v", dst)
	}
	if p, _ := GetPreprocessor("other-env", spaces.NewBox(-1, 1, 2), nil); reflect.TypeOf(p) != reflect.TypeOf(Flatten{}) {
		t.Fatalf("unregistered env got %T", p)
	}
	if _, err := GetPreprocessor("broken-test-env", spaces.NewBox(-1, 1, 2), nil); err == nil || !strings.Contains(err.Error(), "broken-test-env") {
		t.Fatalf("factory error not reported with the env name: %v", err)
	}
	found := false
	for _, n := range PreprocessorNames() {
		found = found || n == "halved-test-env"
	}
	if !found {
		t.Fatal("PreprocessorNames misses a registered env")
	}
}

func TestCheckFiniteNamesTheParameter(t *testing.T) {
	m, _ := NewFullyConnected(2, 2, ModelOptions{Hiddens: []int{3}}, 1)
	p := m.Params()
	if err := p.CheckFinite(true); err != nil {
		t.Fatal(err)
	}
	p.Tensors()[1].Data[2] = math.NaN() // fc0/b[2]
	if err := p.CheckFinite(false); err == nil || !strings.Contains(err.Error(), "fc0/b[2]") {
		t.Fatalf("error %v, want one naming fc0/b[2]", err)
	}
	p.Tensors()[1].Data[2] = 0
	p.Grads()[p.Len()-1] = math.Inf(1)
	if err := p.CheckFinite(true); err == nil || !strings.Contains(err.Error(), "fc_out/b[1]") {
		t.Fatalf("error %v, want one naming fc_out/b[1]", err)
	}
}

func TestPolicyAct(t *testing.T) {
	pol, err := NewPolicy("act-test", spaces.NewBox(-10, 10, 3), spaces.Discrete{N: 3}, "", ModelOptions{Hiddens: []int{8}, Value: true}, 5)
	if err != nil {
		t.Fatal(err)
	}
	pol.Filter = NewMeanStdFilter(3, 5)
	tape := NewTape()
	rng := rand.New(rand.NewPCG(1, 1))
	obs := [][]float64{{1, 2, 3}, {-1, 0, 4}}
	var a Actions
	if err := pol.Act(tape, rng, obs, true, &a); err != nil {
		t.Fatal(err)
	}
	if len(a.Actions) != 2 || len(a.LogP) != 2 || len(a.Values) != 2 || len(a.DistInputs) != 6 || len(a.Obs) != 6 {
		t.Fatalf("sizes: %d actions, %d logp, %d values, %d inputs, %d obs", len(a.Actions), len(a.LogP), len(a.Values), len(a.DistInputs), len(a.Obs))
	}
	if pol.Filter.Stats().N != 2 {
		t.Fatalf("exploring did not update the filter: n=%d", pol.Filter.Stats().N)
	}
	// The returned log-probs equal the differentiable ones on the same inputs.
	tape.Reset()
	o := pol.Model.Forward(tape, tape.Const(2, 3, a.Obs))
	lp := pol.Dist.LogLikelihood(tape, o.Out, tape.Const(2, 1, a.Actions))
	for i := range a.LogP {
		if !near(lp.Data[i], a.LogP[i], 1e-12) {
			t.Fatalf("logp %v vs tape %v", a.LogP, lp.Data)
		}
	}
	if err := pol.Act(tape, nil, obs, false, &a); err != nil {
		t.Fatal(err)
	}
	if pol.Filter.Stats().N != 2 {
		t.Fatal("evaluation updated the filter")
	}
	if err := pol.Act(tape, rng, [][]float64{{1, 2}}, true, &a); err == nil || !strings.Contains(err.Error(), "observation 0") {
		t.Fatalf("bad observation: %v", err)
	}
	if allocs := testing.AllocsPerRun(10, func() { _ = pol.Act(tape, rng, obs, true, &a) }); allocs != 0 {
		t.Fatalf("Act allocates %v times per call", allocs)
	}
	if s := pol.Model.Params().Signature(); !strings.HasPrefix(s, "fc0/w[3x8] fc0/b[1x8] fc_out/w[8x3]") {
		t.Fatalf("signature %q", s)
	}
}

func TestInitialisers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, shape := range [][2]int{{6, 3}, {3, 6}, {5, 5}} {
		p := NewParams()
		w := p.New("w", shape[0], shape[1])
		InitOrthogonal(w, 2, rng)
		// Columns (tall) or rows (wide) are orthogonal with norm 2.
		d := w.Dense()
		var g mat.Dense
		if shape[0] >= shape[1] {
			g.Mul(d.T(), d)
		} else {
			g.Mul(d, d.T())
		}
		r, _ := g.Dims()
		for i := 0; i < r; i++ {
			for j := 0; j < r; j++ {
				want := 0.0
				if i == j {
					want = 4
				}
				if math.Abs(g.At(i, j)-want) > 1e-12 {
					t.Fatalf("%v: gram[%d,%d] = %v, want %v", shape, i, j, g.At(i, j), want)
				}
			}
		}
		InitNormc(w, 0.5, rng)
		for j := 0; j < w.Cols; j++ {
			s := 0.0
			for i := 0; i < w.Rows; i++ {
				s += w.At(i, j) * w.At(i, j)
			}
			if !near(math.Sqrt(s), 0.5, 1e-12) {
				t.Fatalf("normc column %d has norm %v", j, math.Sqrt(s))
			}
		}
		InitXavier(w, 1, rng)
		lim := math.Sqrt(6 / float64(shape[0]+shape[1]))
		for _, v := range w.Data {
			if math.Abs(v) > lim {
				t.Fatalf("xavier value %v beyond %v", v, lim)
			}
		}
	}
}
