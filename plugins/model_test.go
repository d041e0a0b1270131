package plugins

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/models"
)

// buildExample builds ./examples/<name> once for the package (see built).
func buildExample(t *testing.T, name string) string {
	t.Helper()
	return built(t, name, "./examples/"+name)
}

// TestModelPluginGradients checks the model plugin's Backward against
// finite differences of its Forward, through the plugin boundary, and the
// errors for bad sizes, bad config and a plugin of the wrong kind.
func TestModelPluginGradients(t *testing.T) {
	path := buildExample(t, "model")
	ctx := context.Background()
	m, err := NewModel(ctx, path, map[string]any{"hidden": 8}, 3, 2, 1, quiet(t, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.NumWeights() != 8*3+8+2*8+2 {
		t.Fatalf("%d weights, want %d", m.NumWeights(), 8*3+8+2*8+2)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const batch = 5
	x := make([]float64, batch*3)
	gy := make([]float64, batch*2)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	for i := range gy {
		gy[i] = rng.NormFloat64()
	}
	loss := func() float64 {
		y, err := m.Forward(batch, x)
		if err != nil {
			t.Fatal(err)
		}
		s := 0.0
		for i := range y {
			s += y[i] * gy[i]
		}
		return s
	}
	gw, gx, err := m.Backward(batch, x, gy)
	if err != nil {
		t.Fatal(err)
	}
	w, err := m.Weights()
	if err != nil {
		t.Fatal(err)
	}
	const eps = 1e-6
	for _, i := range []int{0, 5, 30, len(w) - 1} {
		w2 := append([]float64(nil), w...)
		w2[i] += eps
		if err := m.SetWeights(w2); err != nil {
			t.Fatal(err)
		}
		up := loss()
		w2[i] -= 2 * eps
		_ = m.SetWeights(w2)
		down := loss()
		if fd := (up - down) / (2 * eps); math.Abs(fd-gw[i]) > 1e-5*(1+math.Abs(fd)) {
			t.Errorf("d loss/d w[%d] = %g by Backward, %g by finite differences", i, gw[i], fd)
		}
	}
	_ = m.SetWeights(w)
	x0 := x[0]
	x[0] = x0 + eps
	up := loss()
	x[0] = x0 - eps
	down := loss()
	x[0] = x0
	if fd := (up - down) / (2 * eps); math.Abs(fd-gx[0]) > 1e-5*(1+math.Abs(fd)) {
		t.Errorf("d loss/d x[0] = %g by Backward, %g by finite differences", gx[0], fd)
	}

	if err := m.SetWeights([]float64{1}); err == nil || !strings.Contains(err.Error(), "has 50") {
		t.Errorf("wrong number of weights: %v, want an error", err)
	}
	if _, err := m.Forward(2, x); err == nil || !strings.Contains(err.Error(), "needs 6 values") {
		t.Errorf("wrong batch size: %v, want an error", err)
	}
	if _, err := NewModel(ctx, path, map[string]any{"layers": 3}, 3, 2, 1, quiet(t, Options{})); err == nil ||
		!strings.Contains(err.Error(), "layers") {
		t.Errorf("bad model config: %v, want an error naming the key", err)
	}
	if _, err := NewModel(ctx, gridworldBin, nil, 3, 2, 1, quiet(t, Options{})); err == nil ||
		!strings.Contains(err.Error(), `"model" plugin is needed`) {
		t.Errorf("an env plugin as a model: %v, want a wrong-kind error", err)
	}
}

// TestDistributionPluginGradients checks the categorical example's
// gradients against finite differences and its samples against its
// probabilities, through the plugin boundary.
func TestDistributionPluginGradients(t *testing.T) {
	path := buildExample(t, "distribution")
	d, err := NewDistribution(context.Background(), path, map[string]any{"temperature": 2}, envs.Discrete{N: 3}, quiet(t, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.InputSize() != 3 {
		t.Fatalf("InputSize = %d, want 3", d.InputSize())
	}
	p := []float64{0.5, -1, 2, 1, 1, 0}
	q := []float64{0, 0, 0, -2, 1, 3}
	actions := []float64{2, 0}
	const eps = 1e-6
	type fn func(in []float64) (vals, grads []float64)
	check := func(name string, f fn) {
		vals, grads := f(p)
		for i := range p {
			up, down := append([]float64(nil), p...), append([]float64(nil), p...)
			up[i] += eps
			down[i] -= eps
			vu, _ := f(up)
			vd, _ := f(down)
			row := i / 3
			if fd := (vu[row] - vd[row]) / (2 * eps); math.Abs(fd-grads[i]) > 1e-6 {
				t.Errorf("%s: gradient[%d] = %g, finite differences %g (value %g)", name, i, grads[i], fd, vals[row])
			}
		}
	}
	must := func(v, g []float64, err error) ([]float64, []float64) {
		if err != nil {
			t.Fatal(err)
		}
		return v, g
	}
	check("log-likelihood", func(in []float64) ([]float64, []float64) { return must(d.LogLikelihood(2, in, actions)) })
	check("entropy", func(in []float64) ([]float64, []float64) { return must(d.Entropy(2, in)) })
	check("KL in p", func(in []float64) ([]float64, []float64) {
		v, gp, _, err := d.KL(2, in, q)
		return must(v, gp, err)
	})
	check("KL in q", func(in []float64) ([]float64, []float64) {
		v, _, gq, err := d.KL(2, q, in)
		return must(v, gq, err)
	})

	// Sampling: frequencies follow softmax(logits / 2) of the first row.
	const n = 4000
	rows := make([]float64, 0, 3*n)
	for i := 0; i < n; i++ {
		rows = append(rows, p[:3]...)
	}
	a, err := d.Sample(n, rows, 7, false)
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]float64, 3)
	for _, x := range a {
		counts[int(x)]++
	}
	lp, _ := must(d.LogLikelihood(3, append(append(append([]float64(nil), p[:3]...), p[:3]...), p[:3]...), []float64{0, 1, 2}))
	for i := range counts {
		if want := math.Exp(lp[i]); math.Abs(counts[i]/n-want) > 0.03 {
			t.Errorf("action %d sampled %.3f of the time, probability %.3f", i, counts[i]/n, want)
		}
	}
	mode, err := d.Sample(1, p[:3], 1, true)
	if err != nil || mode[0] != 2 {
		t.Errorf("deterministic sample = %v, %v; want the mode 2", mode, err)
	}
	if _, err := NewDistribution(context.Background(), path, nil, envs.NewBox(-1, 1, 2), quiet(t, Options{})); err == nil ||
		!strings.Contains(err.Error(), "needs a Discrete action space") {
		t.Errorf("a Box space: %v, want an error", err)
	}
}

// TestModelPluginTrainsOnTheTape trains the model plugin through
// TapeModel with the host's own tape, categorical log-likelihood and Adam,
// the machinery PPO uses: a supervised two-class problem it must learn, with
// the extra value column regressed alongside.
func TestModelPluginTrainsOnTheTape(t *testing.T) {
	path := buildExample(t, "model")
	tm, err := CatalogModel(path, map[string]any{"hidden": 16}, 2, 2, true, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	m := tm.m
	if _, err := NewTapeModel(m, 3, true); err == nil || !strings.Contains(err.Error(), "4 needed") {
		t.Errorf("wrong output count: %v, want an error", err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 128
	obs, labels, targets := make([]float64, 2*n), make([]float64, n), make([]float64, n)
	for i := 0; i < n; i++ {
		x, y := rng.Float64()*2-1, rng.Float64()*2-1
		obs[2*i], obs[2*i+1] = x, y
		if x*y > 0 { // the XOR-like quadrants: not linearly separable
			labels[i] = 1
		}
		targets[i] = x + y
	}
	dist := models.Categorical{N: 2}
	opt := models.NewAdam(0.02)
	tape := models.NewTape()
	params := tm.Params()
	accuracy := func() float64 {
		tape.Reset()
		o := tm.Forward(tape, tape.Const(n, 2, obs))
		if err := tape.Err(); err != nil {
			t.Fatal(err)
		}
		right := 0
		for i := 0; i < n; i++ {
			if (o.Out.At(i, 1) > o.Out.At(i, 0)) == (labels[i] == 1) {
				right++
			}
		}
		return float64(right) / n
	}
	before := accuracy()
	for step := 0; step < 300; step++ {
		tape.Reset()
		o := tm.Forward(tape, tape.Const(n, 2, obs))
		nll := tape.Neg(tape.Mean(dist.LogLikelihood(tape, o.Out, tape.Const(n, 1, labels))))
		vf := tape.Mean(tape.Square(tape.Sub(o.Value, tape.Const(n, 1, targets))))
		loss := tape.Add(nll, vf)
		params.ZeroGrad()
		tape.Backward(loss)
		if err := tape.Err(); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(params.Flat(), params.Grads()); err != nil {
			t.Fatal(err)
		}
	}
	after := accuracy()
	t.Logf("accuracy %.2f before, %.2f after", before, after)
	if after < 0.9 {
		t.Errorf("accuracy %.2f after 300 Adam steps through the plugin (%.2f before), want at least 0.9", after, before)
	}
	// The plugin holds the host's weights.
	w, err := m.Weights()
	if err != nil || !slices.Equal(w, params.Flat()) {
		t.Errorf("plugin weights differ from the host's after training (%v)", err)
	}
}
