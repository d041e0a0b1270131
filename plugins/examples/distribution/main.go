// Command distribution is an example Gray action-distribution plugin: a
// categorical distribution over a Discrete action space, parameterised by
// logits, with a "temperature" config key (default 1) dividing the logits.
//
//	go build -o bin/categorical ./plugins/examples/distribution
package main

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/plugins/sdk"
)

func main() { sdk.ServeDistribution("Categorical", newCategorical) }

type categorical struct {
	n    int
	temp float64
}

func newCategorical(cfg map[string]any, space envs.Space) (sdk.Distribution, error) {
	d, ok := space.(envs.Discrete)
	if !ok {
		return nil, fmt.Errorf("the categorical distribution needs a Discrete action space, got %s", space)
	}
	c := &categorical{n: d.N, temp: 1}
	for k, v := range cfg {
		f, ok := v.(float64)
		if k != "temperature" || !ok || f <= 0 {
			return nil, fmt.Errorf("categorical distribution: config %s=%v: the only key is \"temperature\", a positive number", k, v)
		}
		c.temp = f
	}
	return c, nil
}

func (c *categorical) InputSize() int  { return c.n }
func (c *categorical) ActionSize() int { return 1 }

// probs writes softmax(logits/temp) into p and returns log p.
func (c *categorical) probs(logits, p, logp []float64) {
	m := math.Inf(-1)
	for _, l := range logits {
		m = math.Max(m, l/c.temp)
	}
	z := 0.0
	for i, l := range logits {
		p[i] = math.Exp(l/c.temp - m)
		z += p[i]
	}
	lz := math.Log(z)
	for i, l := range logits {
		p[i] /= z
		logp[i] = l/c.temp - m - lz
	}
}

func (c *categorical) Sample(batch int, in []float64, rng *rand.Rand, det bool) ([]float64, error) {
	out := make([]float64, batch)
	p, lp := make([]float64, c.n), make([]float64, c.n)
	for r := range out {
		c.probs(in[r*c.n:(r+1)*c.n], p, lp)
		u, best := rng.Float64(), 0
		for i := range p {
			if det {
				if p[i] > p[best] {
					best = i
				}
				continue
			}
			if u -= p[i]; u < 0 {
				best = i
				break
			}
			best = i
		}
		out[r] = float64(best)
	}
	return out, nil
}

// LogLikelihood: d log p_a / d logit_i = (1[i=a] - p_i) / temp.
func (c *categorical) LogLikelihood(batch int, in, actions []float64) ([]float64, []float64, error) {
	vals, grads := make([]float64, batch), make([]float64, batch*c.n)
	p, lp := make([]float64, c.n), make([]float64, c.n)
	for r := range vals {
		a := int(actions[r])
		if a < 0 || a >= c.n || float64(a) != actions[r] {
			return nil, nil, fmt.Errorf("categorical distribution: action %v outside Discrete(%d)", actions[r], c.n)
		}
		c.probs(in[r*c.n:(r+1)*c.n], p, lp)
		vals[r] = lp[a]
		for i := range p {
			g := -p[i]
			if i == a {
				g++
			}
			grads[r*c.n+i] = g / c.temp
		}
	}
	return vals, grads, nil
}

// Entropy H = -Σ p log p; dH/d logit_i = -p_i (log p_i + H) / temp.
func (c *categorical) Entropy(batch int, in []float64) ([]float64, []float64, error) {
	vals, grads := make([]float64, batch), make([]float64, batch*c.n)
	p, lp := make([]float64, c.n), make([]float64, c.n)
	for r := range vals {
		c.probs(in[r*c.n:(r+1)*c.n], p, lp)
		h := 0.0
		for i := range p {
			h -= p[i] * lp[i]
		}
		vals[r] = h
		for i := range p {
			grads[r*c.n+i] = -p[i] * (lp[i] + h) / c.temp
		}
	}
	return vals, grads, nil
}

// KL(p||q) = Σ p (log p - log q); d/d p-logit_i = p_i (d_i - KL) / temp with
// d_i = log p_i - log q_i; d/d q-logit_i = (q_i - p_i) / temp.
func (c *categorical) KL(batch int, pin, qin []float64) ([]float64, []float64, []float64, error) {
	vals := make([]float64, batch)
	gp, gq := make([]float64, batch*c.n), make([]float64, batch*c.n)
	p, lp := make([]float64, c.n), make([]float64, c.n)
	q, lq := make([]float64, c.n), make([]float64, c.n)
	for r := range vals {
		c.probs(pin[r*c.n:(r+1)*c.n], p, lp)
		c.probs(qin[r*c.n:(r+1)*c.n], q, lq)
		kl := 0.0
		for i := range p {
			kl += p[i] * (lp[i] - lq[i])
		}
		vals[r] = kl
		for i := range p {
			gp[r*c.n+i] = p[i] * (lp[i] - lq[i] - kl) / c.temp
			gq[r*c.n+i] = (q[i] - p[i]) / c.temp
		}
	}
	return vals, gp, gq, nil
}
