package envs

import (
	"image"
	"math"
)

// Gymnasium's Pendulum-v1 constants (classic_control/pendulum.py).
const (
	pdMaxSpeed  = 8.0
	pdMaxTorque = 2.0
	pdDt        = 0.05
	pdMass      = 1.0
	pdLength    = 1.0
)

// Pendulum is Gymnasium's Pendulum-v1: swing a frictionless pendulum up and
// keep it upright with a torque in [-2, 2]. The observation is
// [cos θ, sin θ, θ̇]; the reward is -(norm(θ)² + 0.1 θ̇² + 0.001 u²) with θ
// normalised to [-π, π). It never terminates; the time limit truncates it.
// The config option "g" sets gravity (default 10).
type Pendulum struct {
	episode
	th, thDot float64
	lastU     float64
	g         float64
	actSpace  Box
	obsSpace  Box
}

func newPendulum(spec Spec, cfg Config) (Env, error) {
	c := newConfigReader(spec.Name, cfg)
	maxSteps := c.maxSteps(spec)
	g := c.float("g", 10.0)
	if err := c.done(); err != nil {
		return nil, err
	}
	e := &Pendulum{g: g}
	e.init(spec, maxSteps)
	e.actSpace = NewBox(-pdMaxTorque, pdMaxTorque, 1)
	e.obsSpace = NewBoxBounds([]float64{-1, -1, -pdMaxSpeed}, []float64{1, 1, pdMaxSpeed})
	return e, nil
}

// ObservationSpace implements Env.
func (e *Pendulum) ObservationSpace() Space { return e.obsSpace }

// ActionSpace implements Env.
func (e *Pendulum) ActionSpace() Space { return e.actSpace }

// Reset implements Env: θ starts uniform in [-π, π), θ̇ in [-1, 1).
func (e *Pendulum) Reset(seed int64) ([]float64, error) { return resetAlloc(e, seed), nil }

// Step implements Env. Unlike Gymnasium, which clips the torque silently, a
// torque outside [-2, 2] is an error: clip it with Box.Clip first.
func (e *Pendulum) Step(action []float64) (Step, error) { return stepAlloc(e, &e.episode, action) }

// Close implements Env.
func (e *Pendulum) Close() error { return nil }

func (e *Pendulum) obsSize() int { return 3 }

func (e *Pendulum) checkAction(action []float64) error {
	_, err := boxAction(e.spec.Name, action, e.actSpace)
	return err
}

func (e *Pendulum) resetInto(seed int64, obs []float64) {
	e.begin(seed)
	e.th = e.uniform(-math.Pi, math.Pi)
	e.thDot = e.uniform(-1, 1)
	e.lastU = 0
	e.observe(obs)
}

func (e *Pendulum) observe(obs []float64) {
	obs[0], obs[1], obs[2] = math.Cos(e.th), math.Sin(e.th), e.thDot
}

func (e *Pendulum) stepInto(action []float64, obs []float64) (float64, bool, bool) {
	u := action[0]
	e.lastU = u
	th, thDot := e.th, e.thDot
	an := angleNormalize(th)
	cost := an*an + 0.1*(thDot*thDot) + 0.001*(u*u)
	newThDot := thDot + (3*e.g/(2*pdLength)*math.Sin(th)+3.0/(pdMass*pdLength*pdLength)*u)*pdDt
	newThDot = clamp(newThDot, -pdMaxSpeed, pdMaxSpeed)
	e.th = th + newThDot*pdDt
	e.thDot = newThDot
	e.observe(obs)
	return -cost, false, e.finish(false)
}

// angleNormalize maps x to [-π, π) with a floored modulo, like Python's %.
func angleNormalize(x float64) float64 {
	const twoPi = 2 * math.Pi
	m := math.Mod(x+math.Pi, twoPi)
	if m < 0 {
		m += twoPi
	}
	return m - math.Pi
}

func clamp(x, lo, hi float64) float64 {
	if x < lo {
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}

// Render implements Renderer: a 500×500 picture of the rod, upright at θ=0.
func (e *Pendulum) Render() (image.Image, error) {
	const dim = 500
	c := newCanvas(dim, dim)
	scale := dim / 4.4
	o := dim / 2.0
	// Positive θ turns anticlockwise on screen, as in Gymnasium.
	tipX, tipY := o-scale*math.Sin(e.th), o-scale*math.Cos(e.th)
	c.line(o, o, tipX, tipY, 0.2*scale, rodRed)
	c.disc(tipX, tipY, 0.1*scale, rodRed)
	// A bar under the axle shows the last torque's size and sign.
	if e.lastU != 0 {
		c.line(o, o+0.6*scale, o+e.lastU/pdMaxTorque*scale, o+0.6*scale, 6, black)
	}
	c.disc(o, o, 0.05*scale, black)
	return c.img, nil
}
