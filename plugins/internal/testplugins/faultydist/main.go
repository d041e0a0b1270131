// Command faultydist is a test-only action-distribution plugin: a
// categorical distribution over softmax(logits) whose process dies
// (exit status 3, after a line on stderr) at its crash_after-th call, or
// whose every call fails with an error from call fail_after on, so that
// the host's handling of a failing distribution can be tested against a
// real plugin process.
package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/plugins/sdk"
)

func main() { sdk.ServeDistribution("FaultyCategorical", newDist) }

type dist struct {
	n                     int
	calls                 int
	crashAfter, failAfter int
}

func newDist(cfg map[string]any, space envs.Space) (sdk.Distribution, error) {
	d, ok := space.(envs.Discrete)
	if !ok {
		return nil, fmt.Errorf("faultydist needs a Discrete action space, got %s", space)
	}
	fd := &dist{n: d.N}
	for k, v := range cfg {
		f, ok := v.(float64)
		if !ok {
			return nil, fmt.Errorf("faultydist: config %s=%v is not a number", k, v)
		}
		switch k {
		case "crash_after":
			fd.crashAfter = int(f)
		case "fail_after":
			fd.failAfter = int(f)
		default:
			return nil, fmt.Errorf("faultydist: unknown config key %q (crash_after, fail_after)", k)
		}
	}
	return fd, nil
}

// call counts a call and misbehaves when it is time to.
func (d *dist) call() error {
	d.calls++
	if d.crashAfter > 0 && d.calls >= d.crashAfter {
		fmt.Fprintf(os.Stderr, "faultydist: crashing at call %d as configured\n", d.calls)
		os.Exit(3)
	}
	if d.failAfter > 0 && d.calls >= d.failAfter {
		return fmt.Errorf("faultydist: failing call %d as configured", d.calls)
	}
	return nil
}

func (d *dist) InputSize() int  { return d.n }
func (d *dist) ActionSize() int { return 1 }

func (d *dist) logSoftmax(row, out []float64) {
	m := math.Inf(-1)
	for _, v := range row {
		m = math.Max(m, v)
	}
	s := 0.0
	for _, v := range row {
		s += math.Exp(v - m)
	}
	for i, v := range row {
		out[i] = v - m - math.Log(s)
	}
}

func (d *dist) Sample(batch int, in []float64, rng *rand.Rand, det bool) ([]float64, error) {
	if err := d.call(); err != nil {
		return nil, err
	}
	out, lp := make([]float64, batch), make([]float64, d.n)
	for r := range out {
		d.logSoftmax(in[r*d.n:(r+1)*d.n], lp)
		u, best := rng.Float64(), 0
		for i, l := range lp {
			if det {
				if l > lp[best] {
					best = i
				}
				continue
			}
			best = i
			if u -= math.Exp(l); u < 0 {
				break
			}
		}
		out[r] = float64(best)
	}
	return out, nil
}

func (d *dist) LogLikelihood(batch int, in, actions []float64) ([]float64, []float64, error) {
	if err := d.call(); err != nil {
		return nil, nil, err
	}
	vals, grads, lp := make([]float64, batch), make([]float64, batch*d.n), make([]float64, d.n)
	for r := range vals {
		d.logSoftmax(in[r*d.n:(r+1)*d.n], lp)
		a := int(actions[r])
		vals[r] = lp[a]
		for i, l := range lp {
			grads[r*d.n+i] = -math.Exp(l)
		}
		grads[r*d.n+a]++
	}
	return vals, grads, nil
}

func (d *dist) Entropy(batch int, in []float64) ([]float64, []float64, error) {
	if err := d.call(); err != nil {
		return nil, nil, err
	}
	vals, grads, lp := make([]float64, batch), make([]float64, batch*d.n), make([]float64, d.n)
	for r := range vals {
		d.logSoftmax(in[r*d.n:(r+1)*d.n], lp)
		h := 0.0
		for _, l := range lp {
			h -= math.Exp(l) * l
		}
		vals[r] = h
		for i, l := range lp {
			grads[r*d.n+i] = -math.Exp(l) * (l + h)
		}
	}
	return vals, grads, nil
}

func (d *dist) KL(batch int, p, q []float64) ([]float64, []float64, []float64, error) {
	if err := d.call(); err != nil {
		return nil, nil, nil, err
	}
	vals := make([]float64, batch)
	gp, gq := make([]float64, batch*d.n), make([]float64, batch*d.n)
	lp, lq := make([]float64, d.n), make([]float64, d.n)
	for r := range vals {
		d.logSoftmax(p[r*d.n:(r+1)*d.n], lp)
		d.logSoftmax(q[r*d.n:(r+1)*d.n], lq)
		kl := 0.0
		for i := range lp {
			kl += math.Exp(lp[i]) * (lp[i] - lq[i])
		}
		vals[r] = kl
		for i := range lp {
			gp[r*d.n+i] = math.Exp(lp[i]) * (lp[i] - lq[i] - kl)
			gq[r*d.n+i] = math.Exp(lq[i]) - math.Exp(lp[i])
		}
	}
	return vals, gp, gq, nil
}
