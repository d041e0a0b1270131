// Command model is an example Gray model plugin: a one-hidden-layer tanh
// network, y = W2·tanh(W1·x + b1) + b2, with its gradients written out by
// hand. Config keys: "hidden" (units, default 32).
//
//	go build -o bin/mlp ./plugins/examples/model
package main

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gray-ml/gray/plugins/sdk"
)

func main() { sdk.ServeModel("TanhMLP", newMLP) }

// mlp keeps its weights in one flat slice: W1 (h×in), b1 (h), W2 (out×h), b2 (out).
type mlp struct {
	in, hid, out int
	w            []float64
}

func newMLP(cfg map[string]any, in, out int, seed int64) (sdk.Model, error) {
	hid := 32
	for k, v := range cfg {
		f, ok := v.(float64)
		if k != "hidden" || !ok || f < 1 || f != math.Trunc(f) {
			return nil, fmt.Errorf("TanhMLP: config %s=%v: the only key is \"hidden\", a positive integer", k, v)
		}
		hid = int(f)
	}
	m := &mlp{in: in, hid: hid, out: out, w: make([]float64, hid*in+hid+out*hid+out)}
	rng := rand.New(rand.NewPCG(uint64(seed), 11))
	w1, _, w2, _ := m.parts(m.w)
	for i := range w1 {
		w1[i] = rng.NormFloat64() / math.Sqrt(float64(in))
	}
	for i := range w2 {
		w2[i] = rng.NormFloat64() * 0.01 / math.Sqrt(float64(hid))
	}
	return m, nil
}

func (m *mlp) parts(w []float64) (w1, b1, w2, b2 []float64) {
	a := m.hid * m.in
	b := a + m.hid
	c := b + m.out*m.hid
	return w[:a], w[a:b], w[b:c], w[c:]
}

// hidden computes tanh(W1·x + b1) for one row.
func (m *mlp) hidden(x, h []float64) {
	w1, b1, _, _ := m.parts(m.w)
	for j := 0; j < m.hid; j++ {
		s := b1[j]
		row := w1[j*m.in : (j+1)*m.in]
		for i, v := range x {
			s += row[i] * v
		}
		h[j] = math.Tanh(s)
	}
}

func (m *mlp) Forward(batch int, inputs []float64) ([]float64, error) {
	_, _, w2, b2 := m.parts(m.w)
	out := make([]float64, batch*m.out)
	h := make([]float64, m.hid)
	for r := 0; r < batch; r++ {
		m.hidden(inputs[r*m.in:(r+1)*m.in], h)
		for k := 0; k < m.out; k++ {
			s := b2[k]
			row := w2[k*m.hid : (k+1)*m.hid]
			for j, v := range h {
				s += row[j] * v
			}
			out[r*m.out+k] = s
		}
	}
	return out, nil
}

func (m *mlp) Backward(batch int, inputs, gy []float64) ([]float64, []float64, error) {
	w1, _, w2, _ := m.parts(m.w)
	gw := make([]float64, len(m.w))
	gw1, gb1, gw2, gb2 := m.parts(gw)
	gx := make([]float64, batch*m.in)
	h := make([]float64, m.hid)
	gh := make([]float64, m.hid)
	for r := 0; r < batch; r++ {
		x := inputs[r*m.in : (r+1)*m.in]
		m.hidden(x, h)
		clear(gh)
		for k := 0; k < m.out; k++ {
			g := gy[r*m.out+k]
			gb2[k] += g
			for j := range h {
				gw2[k*m.hid+j] += g * h[j]
				gh[j] += g * w2[k*m.hid+j]
			}
		}
		for j := range gh {
			gs := gh[j] * (1 - h[j]*h[j]) // tanh' = 1 - tanh²
			gb1[j] += gs
			for i, v := range x {
				gw1[j*m.in+i] += gs * v
				gx[r*m.in+i] += gs * w1[j*m.in+i]
			}
		}
	}
	return gw, gx, nil
}

func (m *mlp) Weights() []float64 { return append([]float64(nil), m.w...) }

func (m *mlp) SetWeights(w []float64) error {
	if len(w) != len(m.w) {
		return fmt.Errorf("TanhMLP: %d weights given, the model has %d", len(w), len(m.w))
	}
	copy(m.w, w)
	return nil
}
