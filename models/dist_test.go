package models

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*(1+math.Abs(b)) }

func TestCategoricalClosedForms(t *testing.T) {
	logits := []float64{0.5, -1, 2, 0, 3, 3, -2, 1}
	other := []float64{0, 0, 0, 0, -1, 2, 0.5, 0}
	actions := []float64{2, 0}
	tape := NewTape()
	d := Categorical{N: 4}
	in, oth := tape.Const(2, 4, logits), tape.Const(2, 4, other)
	logp := d.LogLikelihood(tape, in, tape.Const(2, 1, actions))
	ent := d.Entropy(tape, in)
	kl := d.KL(tape, in, oth)
	fast := make([]float64, 2)
	if err := d.LogProb(logits, actions, fast); err != nil {
		t.Fatal(err)
	}
	probs := func(row []float64) []float64 {
		p := make([]float64, len(row))
		s := 0.0
		for j, v := range row {
			p[j] = math.Exp(v)
			s += p[j]
		}
		for j := range p {
			p[j] /= s
		}
		return p
	}
	for i := 0; i < 2; i++ {
		p, q := probs(logits[i*4:(i+1)*4]), probs(other[i*4:(i+1)*4])
		ref := distuv.NewCategorical(p, nil)
		if w := ref.LogProb(actions[i]); !near(logp.Data[i], w, 1e-12) || !near(fast[i], w, 1e-12) {
			t.Errorf("row %d: logp %v (fast %v), want %v", i, logp.Data[i], fast[i], w)
		}
		if w := ref.Entropy(); !near(ent.Data[i], w, 1e-12) {
			t.Errorf("row %d: entropy %v, want %v", i, ent.Data[i], w)
		}
		w := 0.0
		for j := range p {
			w += p[j] * math.Log(p[j]/q[j])
		}
		if !near(kl.Data[i], w, 1e-12) {
			t.Errorf("row %d: KL %v, want %v", i, kl.Data[i], w)
		}
	}
	// KL of a distribution with itself is zero.
	self := d.KL(tape, in, in)
	for i, v := range self.Data {
		if math.Abs(v) > 1e-12 {
			t.Errorf("row %d: KL(p, p) = %v", i, v)
		}
	}
}

func TestDiagGaussianClosedForms(t *testing.T) {
	// Two rows, K=3: means then log stds.
	inputs := []float64{0.1, -0.5, 2, -0.3, 0.2, 0.7, 1, 0, -1, 0, -1, 0.5}
	other := []float64{0, 0.5, 1.5, 0.1, -0.2, 0.4, 0.3, 0.3, 0.3, -0.5, 0.5, 0}
	actions := []float64{0.4, -1, 2.5, 0.9, 0.2, -0.7}
	d := DiagGaussian{K: 3}
	tape := NewTape()
	in, oth := tape.Const(2, 6, inputs), tape.Const(2, 6, other)
	logp := d.LogLikelihood(tape, in, tape.Const(2, 3, actions))
	ent := d.Entropy(tape, in)
	kl := d.KL(tape, in, oth)
	fast := make([]float64, 2)
	if err := d.LogProb(inputs, actions, fast); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		var wantLogp, wantEnt, wantKL float64
		for j := 0; j < 3; j++ {
			p := distuv.Normal{Mu: inputs[i*6+j], Sigma: math.Exp(inputs[i*6+3+j])}
			q := distuv.Normal{Mu: other[i*6+j], Sigma: math.Exp(other[i*6+3+j])}
			wantLogp += p.LogProb(actions[i*3+j])
			wantEnt += p.Entropy()
			wantKL += numericKL(p, q)
		}
		if !near(logp.Data[i], wantLogp, 1e-12) || !near(fast[i], wantLogp, 1e-12) {
			t.Errorf("row %d: logp %v (fast %v), want %v", i, logp.Data[i], fast[i], wantLogp)
		}
		if !near(ent.Data[i], wantEnt, 1e-12) {
			t.Errorf("row %d: entropy %v, want %v", i, ent.Data[i], wantEnt)
		}
		if !near(kl.Data[i], wantKL, 1e-7) {
			t.Errorf("row %d: KL %v, want %v (numerical integral)", i, kl.Data[i], wantKL)
		}
	}
}

// numericKL integrates p·log(p/q) with the midpoint rule over ±12σ_p.
func numericKL(p, q distuv.Normal) float64 {
	const n = 200000
	lo, hi := p.Mu-12*p.Sigma, p.Mu+12*p.Sigma
	h := (hi - lo) / n
	s := 0.0
	for i := 0; i < n; i++ {
		x := lo + (float64(i)+0.5)*h
		lp := p.LogProb(x)
		s += math.Exp(lp) * (lp - q.LogProb(x))
	}
	return s * h
}

func TestDeterministic(t *testing.T) {
	d := Deterministic{K: 2}
	in := []float64{1, 2, 3, 4}
	act := make([]float64, 4)
	d.Sample(rand.New(rand.NewPCG(1, 1)), in, act)
	for i := range in {
		if act[i] != in[i] {
			t.Fatalf("sample %v, want the inputs %v", act, in)
		}
	}
	tape := NewTape()
	x := tape.Const(2, 2, in)
	for _, v := range [][]float64{d.LogLikelihood(tape, x, x).Data, d.Entropy(tape, x).Data, d.KL(tape, x, x).Data} {
		if len(v) != 2 || v[0] != 0 || v[1] != 0 {
			t.Fatalf("got %v, want two zeros", v)
		}
	}
}

func TestSamplingMatchesDistribution(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	const n = 40000
	// Categorical: frequencies near softmax probabilities.
	logits := []float64{0, 1, -1, 0.5}
	rows := make([]float64, 0, n*4)
	for i := 0; i < n; i++ {
		rows = append(rows, logits...)
	}
	acts := make([]float64, n)
	if err := (Categorical{N: 4}).Sample(rng, rows, acts); err != nil {
		t.Fatal(err)
	}
	counts := make([]float64, 4)
	for _, a := range acts {
		counts[int(a)]++
	}
	lse := logSumExp(logits)
	for j := range logits {
		if p := math.Exp(logits[j] - lse); math.Abs(counts[j]/n-p) > 0.01 {
			t.Errorf("action %d frequency %.4f, probability %.4f", j, counts[j]/n, p)
		}
	}
	mode := make([]float64, 1)
	if err := (Categorical{N: 4}).Mode(logits, mode); err != nil {
		t.Fatal(err)
	}
	if mode[0] != 1 {
		t.Errorf("mode %v, want 1", mode[0])
	}
	// DiagGaussian: sample mean and std near μ and σ.
	g := DiagGaussian{K: 1}
	in := make([]float64, 0, 2*n)
	for i := 0; i < n; i++ {
		in = append(in, 1.5, math.Log(0.5))
	}
	x := make([]float64, n)
	if err := g.Sample(rng, in, x); err != nil {
		t.Fatal(err)
	}
	var s, s2 float64
	for _, v := range x {
		s += v
		s2 += v * v
	}
	mean := s / n
	std := math.Sqrt(s2/n - mean*mean)
	if math.Abs(mean-1.5) > 0.02 || math.Abs(std-0.5) > 0.02 {
		t.Errorf("sample mean %v std %v, want 1.5 and 0.5", mean, std)
	}
}

// TestDistRejectsBadSizes: rows that do not fit a distribution are an
// error on the rollout path, not a panic.
func TestDistRejectsBadSizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, d := range []ActionDist{Categorical{N: 3}, DiagGaussian{K: 2}, Deterministic{K: 2}} {
		in := make([]float64, 2*d.InputSize())
		acts := make([]float64, 2*d.ActionSize())
		if err := d.Sample(rng, in, acts); err != nil {
			t.Errorf("%s: rows that fit: %v", d.Name(), err)
		}
		for name, err := range map[string]error{
			"Sample, ragged inputs":  d.Sample(rng, in[:len(in)-1], acts),
			"Mode, short actions":    d.Mode(in, acts[:1]),
			"LogProb, short logp":    d.LogProb(in, acts, make([]float64, 1)),
			"LogProb, short actions": d.LogProb(in, acts[:1], make([]float64, 2)),
		} {
			if err == nil || !strings.Contains(err.Error(), "do not fit") {
				t.Errorf("%s: %s: error %v", d.Name(), name, err)
			}
		}
	}
}
