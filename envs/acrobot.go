package envs

import (
	"image"
	"math"
)

// Gymnasium's Acrobot-v1 constants (classic_control/acrobot.py).
const (
	acDt       = 0.2
	acLink1    = 1.0 // length of link 1
	acLink2    = 1.0 // length of link 2
	acMass1    = 1.0
	acMass2    = 1.0
	acCOM1     = 0.5 // position of link 1's centre of mass
	acCOM2     = 0.5
	acMOI      = 1.0 // moment of inertia of both links
	acGravity  = 9.8
	acMaxVel1  = 4 * math.Pi
	acMaxVel2  = 9 * math.Pi
	acNumTorqs = 3
)

// acTorques maps the three discrete actions to torques on the middle joint.
var acTorques = [acNumTorqs]float64{-1, 0, 1}

// Acrobot is Gymnasium's Acrobot-v1 (Sutton and Barto's book dynamics,
// integrated with one RK4 step of 0.2 s): swing the tip of a two-link
// pendulum above the bar by torquing the middle joint with -1, 0 or +1. The
// observation is [cos θ1, sin θ1, cos θ2, sin θ2, θ̇1, θ̇2]; the reward is -1
// per step and 0 on the terminating step, when -cos θ1 - cos(θ1+θ2) > 1.
type Acrobot struct {
	episode
	s        [4]float64
	obsSpace Box
}

func newAcrobot(spec Spec, cfg Config) (Env, error) {
	c := newConfigReader(spec.Name, cfg)
	maxSteps := c.maxSteps(spec)
	if err := c.done(); err != nil {
		return nil, err
	}
	e := &Acrobot{}
	e.init(spec, maxSteps)
	e.obsSpace = NewBoxBounds([]float64{-1, -1, -1, -1, -acMaxVel1, -acMaxVel2},
		[]float64{1, 1, 1, 1, acMaxVel1, acMaxVel2})
	return e, nil
}

// ObservationSpace implements Env.
func (e *Acrobot) ObservationSpace() Space { return e.obsSpace }

// ActionSpace implements Env.
func (e *Acrobot) ActionSpace() Space { return Discrete{N: acNumTorqs} }

// Reset implements Env: all four state variables start uniform in [-0.1, 0.1).
func (e *Acrobot) Reset(seed int64) ([]float64, error) { return resetAlloc(e, seed), nil }

// Step implements Env.
func (e *Acrobot) Step(action []float64) (Step, error) { return stepAlloc(e, &e.episode, action) }

// Close implements Env.
func (e *Acrobot) Close() error { return nil }

func (e *Acrobot) obsSize() int { return 6 }

func (e *Acrobot) checkAction(action []float64) error {
	_, err := discreteAction(e.spec.Name, action, acNumTorqs)
	return err
}

func (e *Acrobot) resetInto(seed int64, obs []float64) {
	e.begin(seed)
	for i := range e.s {
		// Gymnasium draws the initial state as float32.
		e.s[i] = float64(float32(e.uniform(-0.1, 0.1)))
	}
	e.observe(obs)
}

func (e *Acrobot) observe(obs []float64) {
	obs[0], obs[1] = math.Cos(e.s[0]), math.Sin(e.s[0])
	obs[2], obs[3] = math.Cos(e.s[1]), math.Sin(e.s[1])
	obs[4], obs[5] = e.s[2], e.s[3]
}

func (e *Acrobot) stepInto(action []float64, obs []float64) (float64, bool, bool) {
	torque := acTorques[int(action[0])]
	s := acRK4(e.s, torque, acDt)
	s[0] = wrapAngle(s[0])
	s[1] = wrapAngle(s[1])
	s[2] = clamp(s[2], -acMaxVel1, acMaxVel1)
	s[3] = clamp(s[3], -acMaxVel2, acMaxVel2)
	e.s = s
	e.observe(obs)
	terminated := -math.Cos(s[0])-math.Cos(s[1]+s[0]) > 1.0
	reward := -1.0
	if terminated {
		reward = 0
	}
	return reward, terminated, e.finish(terminated)
}

// acRK4 advances s by one classic fourth-order Runge-Kutta step of dt with
// the torque held constant.
func acRK4(s [4]float64, torque, dt float64) [4]float64 {
	add := func(a, k [4]float64, h float64) [4]float64 {
		return [4]float64{a[0] + h*k[0], a[1] + h*k[1], a[2] + h*k[2], a[3] + h*k[3]}
	}
	k1 := acDeriv(s, torque)
	k2 := acDeriv(add(s, k1, dt/2), torque)
	k3 := acDeriv(add(s, k2, dt/2), torque)
	k4 := acDeriv(add(s, k3, dt), torque)
	var out [4]float64
	for i := range out {
		out[i] = s[i] + dt/6.0*(k1[i]+2*k2[i]+2*k3[i]+k4[i])
	}
	return out
}

// acDeriv is the time derivative of [θ1, θ2, θ̇1, θ̇2] under the book's
// equations of motion.
func acDeriv(s [4]float64, a float64) [4]float64 {
	const (
		m1, m2, l1, lc1, lc2 = acMass1, acMass2, acLink1, acCOM1, acCOM2
		i1, i2               = acMOI, acMOI
	)
	// g is a variable so that (m1*lc1+m2*l1)*g is rounded in float64 as in
	// Gymnasium rather than folded exactly at compile time.
	g := float64(acGravity)
	th1, th2, dth1, dth2 := s[0], s[1], s[2], s[3]
	cos2, sin2 := math.Cos(th2), math.Sin(th2)
	d1 := m1*lc1*lc1 + m2*(l1*l1+lc2*lc2+2*l1*lc2*cos2) + i1 + i2
	d2 := m2*(lc2*lc2+l1*lc2*cos2) + i2
	phi2 := m2 * lc2 * g * math.Cos(th1+th2-math.Pi/2)
	phi1 := -m2*l1*lc2*(dth2*dth2)*sin2 - 2*m2*l1*lc2*dth2*dth1*sin2 +
		(m1*lc1+m2*l1)*g*math.Cos(th1-math.Pi/2) + phi2
	ddth2 := (a + d2/d1*phi1 - m2*l1*lc2*(dth1*dth1)*sin2 - phi2) / (m2*lc2*lc2 + i2 - d2*d2/d1)
	ddth1 := -(d2*ddth2 + phi1) / d1
	return [4]float64{dth1, dth2, ddth1, ddth2}
}

// wrapAngle wraps x into [-π, π] by whole turns, as Gymnasium's wrap does.
func wrapAngle(x float64) float64 {
	for x > math.Pi {
		x -= 2 * math.Pi
	}
	for x < -math.Pi {
		x += 2 * math.Pi
	}
	return x
}

// Render implements Renderer: a 500×500 picture of both links hanging from
// the pivot, with the line the tip must cross.
func (e *Acrobot) Render() (image.Image, error) {
	const dim = 500
	c := newCanvas(dim, dim)
	scale := dim / (2 * (acLink1 + acLink2 + 0.2))
	o := dim / 2.0
	// θ1 = 0 hangs straight down; image y grows downwards.
	p1x, p1y := o+acLink1*math.Sin(e.s[0])*scale, o+acLink1*math.Cos(e.s[0])*scale
	p2x := p1x + acLink2*math.Sin(e.s[0]+e.s[1])*scale
	p2y := p1y + acLink2*math.Cos(e.s[0]+e.s[1])*scale
	c.line(o-2.2*scale, o-scale, o+2.2*scale, o-scale, 1, black)
	c.line(o, o, p1x, p1y, 0.2*scale, linkCyan)
	c.line(p1x, p1y, p2x, p2y, 0.2*scale, linkCyan)
	c.disc(o, o, 0.1*scale, jointYellow)
	c.disc(p1x, p1y, 0.1*scale, jointYellow)
	return c.img, nil
}
