package models

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// remoteLinear stands in for a plugin model: out = x·W with W held as a flat
// [1×k·n] weight tensor, computed outside the tape.
type remoteLinear struct {
	k, n int
	fail error
}

func (f remoteLinear) Forward(x, w, out *Tensor) error {
	if f.fail != nil {
		return f.fail
	}
	for i := 0; i < x.Rows; i++ {
		for j := 0; j < f.n; j++ {
			s := 0.0
			for l := 0; l < f.k; l++ {
				s += x.At(i, l) * w.Data[l*f.n+j]
			}
			out.Data[i*f.n+j] = s
		}
	}
	return nil
}

func (f remoteLinear) Backward(x, w, out *Tensor, g, xg, wg []float64) error {
	for i := 0; i < x.Rows; i++ {
		for j := 0; j < f.n; j++ {
			for l := 0; l < f.k; l++ {
				if xg != nil {
					xg[i*f.k+l] += g[i*f.n+j] * w.Data[l*f.n+j]
				}
				if wg != nil {
					wg[l*f.n+j] += g[i*f.n+j] * x.At(i, l)
				}
			}
		}
	}
	return nil
}

func TestApplyExternalFunctionGradients(t *testing.T) {
	checkGrad(t, gradCase{name: "Apply", shapes: [][2]int{{3, 4}, {1, 8}}, f: func(tp *Tape, x []*Tensor) *Tensor {
		return tp.Tanh(tp.Apply(remoteLinear{k: 4, n: 2}, x[0], x[1], 2))
	}}, 5)
}

func TestApplyReportsErrors(t *testing.T) {
	tape := NewTape()
	x := tape.Const(2, 4, []float64{1, 2, 3, 4, 5, 6, 7, 8})
	out := tape.Apply(remoteLinear{k: 4, n: 2, fail: errors.New("plugin exited")}, x, tape.Const(1, 8, nil), 2)
	if err := tape.Err(); err == nil || !strings.Contains(err.Error(), "plugin exited") {
		t.Fatalf("Err() = %v", err)
	}
	for _, v := range out.Data {
		if v != 0 {
			t.Fatalf("failed output not zeroed: %v", out.Data)
		}
	}
	tape.Reset()
	if tape.Err() != nil {
		t.Fatal("Reset kept the error")
	}
}

// TestVariableGivesInputGradients is what a distribution plugin answers:
// per-row values and their gradients with respect to the inputs.
func TestVariableGivesInputGradients(t *testing.T) {
	tape := NewTape()
	logits := tape.Variable(2, 3, []float64{0, 1, 2, 1, 1, 1})
	logp := Categorical{N: 3}.LogLikelihood(tape, logits, tape.Const(2, 1, []float64{2, 0}))
	if err := tape.BackwardFrom(logp, []float64{1, 1}); err != nil {
		t.Fatal(err)
	}
	// d log softmax(z)_a / dz_j = 1[j=a] - softmax(z)_j.
	for i, a := range []int{2, 0} {
		row := logits.Data[i*3 : (i+1)*3]
		lse := logSumExp(row)
		for j := 0; j < 3; j++ {
			want := -math.Exp(row[j] - lse)
			if j == a {
				want++
			}
			if !near(logits.Grad[i*3+j], want, 1e-12) {
				t.Fatalf("row %d: grad %v, want %v at %d", i, logits.Grad[i*3:(i+1)*3], want, j)
			}
		}
	}
}
