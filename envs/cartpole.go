package envs

import (
	"image"
	"math"
)

// Gymnasium's CartPole constants (classic_control/cartpole.py).
const (
	cpGravity        = 9.8
	cpMassCart       = 1.0
	cpMassPole       = 0.1
	cpTotalMass      = cpMassPole + cpMassCart
	cpLength         = 0.5 // half the pole's length
	cpPoleMassLength = cpMassPole * cpLength
	cpForceMag       = 10.0
	cpTau            = 0.02 // seconds between state updates
	cpXThreshold     = 2.4
)

// cpThetaThreshold is 12 degrees, computed in float64 one operation at a
// time as Gymnasium computes it: Go would fold the constant expression
// exactly and land one ulp away from Gymnasium's threshold.
var cpThetaThreshold = func() float64 { pi := math.Pi; return 12 * 2 * pi / 360 }()

// CartPole is Barto, Sutton and Anderson's cart-pole as Gymnasium's
// CartPole-v0/v1: push the cart left (0) or right (1) to keep the pole up.
// The observation is [x, ẋ, θ, θ̇]; the reward is 1 for every step,
// including the one that terminates (or, with the sutton_barto_reward
// config option, 0 per step and -1 on termination). An episode terminates
// when |x| > 2.4 or |θ| > 12°. Stepping after that without Reset is an
// error (Gymnasium only warns, and pays 0 reward).
type CartPole struct {
	episode
	state      [4]float64
	suttonBart bool
	obsSpace   Box
}

func newCartPole(spec Spec, cfg Config) (Env, error) {
	c := newConfigReader(spec.Name, cfg)
	maxSteps := c.maxSteps(spec)
	sb := c.bool("sutton_barto_reward", false)
	if err := c.done(); err != nil {
		return nil, err
	}
	e := &CartPole{suttonBart: sb}
	e.init(spec, maxSteps)
	// Gymnasium bounds the unbounded velocities by float32's maximum.
	f32 := float64(math.MaxFloat32)
	hi := []float64{cpXThreshold * 2, f32, cpThetaThreshold * 2, f32}
	lo := []float64{-hi[0], -hi[1], -hi[2], -hi[3]}
	e.obsSpace = NewBoxBounds(lo, hi)
	return e, nil
}

// ObservationSpace implements Env.
func (e *CartPole) ObservationSpace() Space { return e.obsSpace }

// ActionSpace implements Env.
func (e *CartPole) ActionSpace() Space { return Discrete{N: 2} }

// Reset implements Env: every state variable starts uniform in [-0.05, 0.05).
func (e *CartPole) Reset(seed int64) ([]float64, error) { return resetAlloc(e, seed), nil }

// Step implements Env.
func (e *CartPole) Step(action []float64) (Step, error) { return stepAlloc(e, &e.episode, action) }

// Close implements Env.
func (e *CartPole) Close() error { return nil }

func (e *CartPole) obsSize() int { return 4 }

func (e *CartPole) checkAction(action []float64) error {
	_, err := discreteAction(e.spec.Name, action, 2)
	return err
}

func (e *CartPole) resetInto(seed int64, obs []float64) {
	e.begin(seed)
	for i := range e.state {
		e.state[i] = e.uniform(-0.05, 0.05)
	}
	copy(obs, e.state[:])
}

func (e *CartPole) stepInto(action []float64, obs []float64) (float64, bool, bool) {
	x, xDot, theta, thetaDot := e.state[0], e.state[1], e.state[2], e.state[3]
	force := -cpForceMag
	if action[0] == 1 {
		force = cpForceMag
	}
	// Products are grouped as Gymnasium's Python groups them (x**2 first),
	// so that float64 rounding matches too.
	cos, sin := math.Cos(theta), math.Sin(theta)
	temp := (force + cpPoleMassLength*(thetaDot*thetaDot)*sin) / cpTotalMass
	thetaAcc := (cpGravity*sin - cos*temp) / (cpLength * (4.0/3.0 - cpMassPole*(cos*cos)/cpTotalMass))
	xAcc := temp - cpPoleMassLength*thetaAcc*cos/cpTotalMass
	// Explicit Euler, Gymnasium's default kinematics integrator.
	x += cpTau * xDot
	xDot += cpTau * xAcc
	theta += cpTau * thetaDot
	thetaDot += cpTau * thetaAcc
	e.state = [4]float64{x, xDot, theta, thetaDot}
	_ = obs[3]
	obs[0], obs[1], obs[2], obs[3] = x, xDot, theta, thetaDot

	terminated := x < -cpXThreshold || x > cpXThreshold || theta < -cpThetaThreshold || theta > cpThetaThreshold
	reward := 1.0
	if e.suttonBart {
		reward = 0
		if terminated {
			reward = -1
		}
	}
	return reward, terminated, e.finish(terminated)
}

// Render implements Renderer: a 600×400 picture of the cart and pole.
func (e *CartPole) Render() (image.Image, error) {
	const w, h = 600, 400
	c := newCanvas(w, h)
	scale := w / (cpXThreshold * 2)
	cartY := 300.0 // image y of the cart's top (y grows downwards)
	c.line(0, cartY, w, cartY, 1, black)
	cartX := e.state[0]*scale + w/2
	c.rect(cartX-25, cartY-15, cartX+25, cartY+15, black)
	// The pole hinges on the axle and leans by θ from the vertical.
	axleY := cartY - 7.5
	poleLen := scale * 2 * cpLength
	th := e.state[2]
	c.line(cartX, axleY, cartX+poleLen*math.Sin(th), axleY-poleLen*math.Cos(th), 10, poleBrown)
	c.disc(cartX, axleY, 5, axleBlue)
	return c.img, nil
}
