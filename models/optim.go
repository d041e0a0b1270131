package models

import (
	"fmt"
	"math"
)

// Optimizer updates weights in place from their gradients. Both are flat
// vectors (Params.Flat and Params.Grads), so one optimizer serves a local
// model, a parameter server and gradients shipped between workers alike.
type Optimizer interface {
	Step(weights, grads []float64) error
}

// SGD is stochastic gradient descent with optional (heavy-ball) momentum
// and weight decay (an L2 penalty of WeightDecay/2·|w|², added to the
// gradient as in PyTorch): d = g + WeightDecay·w; v = momentum·v + d;
// w -= LR·v.
type SGD struct {
	LR          float64
	Momentum    float64
	WeightDecay float64
	velocity    []float64
}

// NewSGD returns SGD with learning rate lr and momentum (0: none); set
// WeightDecay for an L2 penalty.
func NewSGD(lr, momentum float64) *SGD { return &SGD{LR: lr, Momentum: momentum} }

// Step implements Optimizer.
func (o *SGD) Step(w, g []float64) error {
	if len(w) != len(g) {
		return fmt.Errorf("models: SGD step with %d weights and %d gradients", len(w), len(g))
	}
	g = g[:len(w)]
	wd := o.WeightDecay
	if o.Momentum == 0 {
		for i, d := range g {
			w[i] -= o.LR * (d + wd*w[i])
		}
		return nil
	}
	if len(o.velocity) != len(w) {
		o.velocity = make([]float64, len(w))
	}
	v := o.velocity[:len(w)]
	for i, d := range g {
		v[i] = o.Momentum*v[i] + d + wd*w[i]
		w[i] -= o.LR * v[i]
	}
	return nil
}

// Adam is the Adam optimizer (Kingma & Ba) with bias correction:
// m = β1·m + (1-β1)·g, v = β2·v + (1-β2)·g², and
// w -= LR·m̂/(√v̂ + Epsilon) with m̂ = m/(1-β1ᵗ), v̂ = v/(1-β2ᵗ).
// Change LR between steps for a schedule.
type Adam struct {
	LR, Beta1, Beta2, Epsilon float64
	state                     AdamState
}

// AdamState is Adam's internal state, for checkpoints.
type AdamState struct {
	Step int       `json:"step"`
	M    []float64 `json:"m"`
	V    []float64 `json:"v"`
}

// NewAdam returns Adam with learning rate lr and the usual β1 = 0.9,
// β2 = 0.999, ε = 1e-8.
func NewAdam(lr float64) *Adam { return &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Epsilon: 1e-8} }

// Step implements Optimizer.
func (o *Adam) Step(w, g []float64) error { return o.StepOn(nil, w, g) }

// adamGrain is the alignment of the ranges StepOn hands to a team's
// members: a multiple of the four weights the AVX2 loop updates at a time,
// so each weight takes the same path (and rounding) for any team.
const adamGrain = 1024

// StepOn is Step with the update split over team's goroutines (nil: the
// caller's alone); the weights it gives do not depend on the team.
func (o *Adam) StepOn(team *Team, w, g []float64) error {
	if len(w) != len(g) {
		return fmt.Errorf("models: Adam step with %d weights and %d gradients", len(w), len(g))
	}
	u, err := o.next(len(w))
	if err != nil {
		return err
	}
	if team.Size() == 1 {
		// No closure: a step on one goroutine allocates nothing.
		u.apply(w, g, 0, len(w))
		return nil
	}
	shared := u // only this copy escapes to the closure
	team.Ranges(len(w), adamGrain, func(lo, hi int) { shared.apply(w, g, lo, hi) })
	return nil
}

// adamStep is one Adam step's constants and state, ready to apply to
// ranges of the weights.
type adamStep struct {
	m, v                       []float64
	b1, b2, step, sc2, epsilon float64
}

// next counts a step on n weights (making the state on the first) and
// returns its constants.
func (o *Adam) next(n int) (adamStep, error) {
	s := &o.state
	if len(s.M) != n {
		if s.Step != 0 {
			return adamStep{}, fmt.Errorf("models: Adam state is for %d weights, got %d; use one Adam per model", len(s.M), n)
		}
		s.M, s.V = make([]float64, n), make([]float64, n)
	}
	s.Step++
	b1, b2 := o.Beta1, o.Beta2
	c1 := 1 / (1 - math.Pow(b1, float64(s.Step)))
	c2 := 1 / (1 - math.Pow(b2, float64(s.Step)))
	// w -= LR·c1·m / (√(c2·v) + ε), with √c2 taken out of the loop.
	return adamStep{m: s.M, v: s.V, b1: b1, b2: b2, step: o.LR * c1, sc2: math.Sqrt(c2), epsilon: o.Epsilon}, nil
}

// apply updates the weights [lo, hi) (lo a multiple of four, so each
// weight takes the same path for any cut).
func (u *adamStep) apply(w, g []float64, lo, hi int) {
	adamUpdate(w[lo:hi], g[lo:hi], u.m[lo:hi], u.v[lo:hi], u.b1, u.b2, u.step, u.sc2, u.epsilon)
}

// adamUpdate applies one Adam update; step is LR times the first moment's
// bias correction, sc2 the square root of the second's. CPUs with AVX2 and
// FMA update four weights at a time, with AVX-512 eight.
func adamUpdate(w, g, m, v []float64, b1, b2, step, sc2, eps float64) {
	done, _ := adamVector(w, g, m, v, b1, b2, step, sc2, eps, 1, false)
	adamGo(w[done:], g[done:], m[done:], v[done:], b1, b2, step, sc2, eps)
}

// adamVector updates the weights the vector kernels take, a multiple of
// four from the start of w (none without AVX2 and FMA), and returns how
// many, and whether those are finite. Eight at a time where the CPU has
// AVX-512, then four: a square root and a division per weight bound the
// update, and a 512-bit instruction does eight of each in about the time a
// 256-bit one does four. The two kernels give a weight the same bits, so
// a range's cut between them does not matter.
func adamVector(w, g, m, v []float64, b1, b2, step, sc2, eps, scale float64, clear bool) (int, bool) {
	if !haveFMA {
		return 0, true
	}
	done, finite := 0, true
	if haveAVX512 {
		finite = adam8(w, g, m, v, b1, b2, step, sc2, eps, scale, clear)
		done = len(w) &^ 7
	}
	if len(w)-done >= 4 {
		w, g, m, v := w[done:], g[done:], m[done:], v[done:]
		finite = adam4(w, g, m, v, b1, b2, step, sc2, eps, scale, clear) && finite
		done += len(w) &^ 3
	}
	return done, finite
}

// adamScaledUpdate is adamUpdate on the gradient g·scale that leaves g
// zero; it reports whether every updated weight is finite. The values are
// adamUpdate's after scaling g (the product is the same in a register as
// in memory).
func adamScaledUpdate(w, g, m, v []float64, b1, b2, step, sc2, eps, scale float64) bool {
	done, finite := adamVector(w, g, m, v, b1, b2, step, sc2, eps, scale, true)
	w, g, m, v = w[done:], g[done:len(w)], m[done:len(w)], v[done:len(w)]
	for i, d := range g {
		g[i] = 0
		d *= scale
		mi := b1*m[i] + (1-b1)*d
		vi := b2*v[i] + (1-b2)*d*d
		m[i], v[i] = mi, vi
		w[i] -= step * mi / (math.Sqrt(vi)*sc2 + eps)
		if math.IsNaN(w[i]) || math.IsInf(w[i], 0) {
			finite = false
		}
	}
	return finite
}

func adamGo(w, g, m, v []float64, b1, b2, step, sc2, eps float64) {
	g, m, v = g[:len(w)], m[:len(w)], v[:len(w)]
	for i, d := range g {
		mi := b1*m[i] + (1-b1)*d
		vi := b2*v[i] + (1-b2)*d*d
		m[i], v[i] = mi, vi
		w[i] -= step * mi / (math.Sqrt(vi)*sc2 + eps)
	}
}

// State returns a copy of the optimizer's state.
func (o *Adam) State() AdamState {
	return AdamState{Step: o.state.Step, M: append([]float64(nil), o.state.M...), V: append([]float64(nil), o.state.V...)}
}

// SetState restores a state returned by State.
func (o *Adam) SetState(s AdamState) error {
	if len(s.M) != len(s.V) {
		return fmt.Errorf("models: Adam state with %d first and %d second moments", len(s.M), len(s.V))
	}
	o.state = AdamState{Step: s.Step, M: append([]float64(nil), s.M...), V: append([]float64(nil), s.V...)}
	return nil
}

// GlobalNorm returns the Euclidean norm of g.
func GlobalNorm(g []float64) float64 {
	s := 0.0
	for _, v := range g {
		s += v * v
	}
	return math.Sqrt(s)
}

// ClipByGlobalNorm scales g in place so that its Euclidean norm is at most
// maxNorm, and returns the norm before clipping (worth logging; NaN or Inf
// there means the loss diverged).
func ClipByGlobalNorm(g []float64, maxNorm float64) float64 {
	n := GlobalNorm(g)
	if f := ClipScale(n, maxNorm); f != 1 {
		for i := range g {
			g[i] *= f
		}
	}
	return n
}

// ClipScale is the factor that brings a gradient of global norm norm down
// to maxNorm: 1 when it is within the limit or maxNorm is 0 (no clipping).
// A data-parallel step passes it to Adam.Ranges, which scales as it steps.
func ClipScale(norm, maxNorm float64) float64 {
	if norm > maxNorm && maxNorm > 0 {
		return maxNorm / norm
	}
	return 1
}
