package envs

import (
	"image"
	"math"
)

// Gymnasium's mountain-car constants (classic_control/mountain_car.py and
// continuous_mountain_car.py).
const (
	mcMinPosition = -1.2
	mcMaxPosition = 0.6
	mcMaxSpeed    = 0.07
	mcForce       = 0.001  // discrete version
	mcGravity     = 0.0025 // both versions
	mcGoal        = 0.5    // discrete version
	mccPower      = 0.0015 // continuous version
	mccGoal       = 0.45   // continuous version
)

// MountainCar is Gymnasium's MountainCar-v0: push an underpowered car left
// (0), not at all (1) or right (2) to reach the flag at x ≥ 0.5. The
// observation is [position, velocity]; the reward is -1 per step. The
// config option "goal_velocity" (default 0) also requires a velocity at
// the goal.
type MountainCar struct {
	episode
	pos, vel     float64
	goalVelocity float64
	obsSpace     Box
}

func newMountainCar(spec Spec, cfg Config) (Env, error) {
	c := newConfigReader(spec.Name, cfg)
	maxSteps := c.maxSteps(spec)
	gv := c.float("goal_velocity", 0)
	if err := c.done(); err != nil {
		return nil, err
	}
	e := &MountainCar{goalVelocity: gv, obsSpace: mcObsSpace()}
	e.init(spec, maxSteps)
	return e, nil
}

func mcObsSpace() Box {
	return NewBoxBounds([]float64{mcMinPosition, -mcMaxSpeed}, []float64{mcMaxPosition, mcMaxSpeed})
}

// ObservationSpace implements Env.
func (e *MountainCar) ObservationSpace() Space { return e.obsSpace }

// ActionSpace implements Env.
func (e *MountainCar) ActionSpace() Space { return Discrete{N: 3} }

// Reset implements Env: the position starts uniform in [-0.6, -0.4), at rest.
func (e *MountainCar) Reset(seed int64) ([]float64, error) { return resetAlloc(e, seed), nil }

// Step implements Env.
func (e *MountainCar) Step(action []float64) (Step, error) { return stepAlloc(e, &e.episode, action) }

// Close implements Env.
func (e *MountainCar) Close() error { return nil }

func (e *MountainCar) obsSize() int { return 2 }

func (e *MountainCar) checkAction(action []float64) error {
	_, err := discreteAction(e.spec.Name, action, 3)
	return err
}

func (e *MountainCar) resetInto(seed int64, obs []float64) {
	e.begin(seed)
	e.pos, e.vel = e.uniform(-0.6, -0.4), 0
	obs[0], obs[1] = e.pos, e.vel
}

func (e *MountainCar) stepInto(action []float64, obs []float64) (float64, bool, bool) {
	// Python's velocity += a + b adds a + b first.
	vel := e.vel + ((action[0]-1)*mcForce + math.Cos(3*e.pos)*(-mcGravity))
	vel = clamp(vel, -mcMaxSpeed, mcMaxSpeed)
	pos := clamp(e.pos+vel, mcMinPosition, mcMaxPosition)
	if pos == mcMinPosition && vel < 0 {
		vel = 0 // the car hits the left wall and stops
	}
	e.pos, e.vel = pos, vel
	obs[0], obs[1] = pos, vel
	terminated := pos >= mcGoal && vel >= e.goalVelocity
	return -1, terminated, e.finish(terminated)
}

// Render implements Renderer: a 600×400 picture of the hill, car and flag.
func (e *MountainCar) Render() (image.Image, error) { return renderMountain(e.pos, mcGoal), nil }

// MountainCarContinuous is Gymnasium's MountainCarContinuous-v0: the same
// hill with a force in [-1, 1] and the flag at x ≥ 0.45. The reward is
// -0.1·a² per step plus 100 on reaching the goal. The config option
// "goal_velocity" (default 0) also requires a velocity at the goal.
type MountainCarContinuous struct {
	episode
	pos, vel     float64
	goalVelocity float64
	actSpace     Box
	obsSpace     Box
}

func newMountainCarContinuous(spec Spec, cfg Config) (Env, error) {
	c := newConfigReader(spec.Name, cfg)
	maxSteps := c.maxSteps(spec)
	gv := c.float("goal_velocity", 0)
	if err := c.done(); err != nil {
		return nil, err
	}
	e := &MountainCarContinuous{goalVelocity: gv, actSpace: NewBox(-1, 1, 1), obsSpace: mcObsSpace()}
	e.init(spec, maxSteps)
	return e, nil
}

// ObservationSpace implements Env.
func (e *MountainCarContinuous) ObservationSpace() Space { return e.obsSpace }

// ActionSpace implements Env.
func (e *MountainCarContinuous) ActionSpace() Space { return e.actSpace }

// Reset implements Env: the position starts uniform in [-0.6, -0.4), at rest.
func (e *MountainCarContinuous) Reset(seed int64) ([]float64, error) { return resetAlloc(e, seed), nil }

// Step implements Env. Unlike Gymnasium, which clips the force silently, a
// force outside [-1, 1] is an error: clip it with Box.Clip first.
func (e *MountainCarContinuous) Step(action []float64) (Step, error) {
	return stepAlloc(e, &e.episode, action)
}

// Close implements Env.
func (e *MountainCarContinuous) Close() error { return nil }

func (e *MountainCarContinuous) obsSize() int { return 2 }

func (e *MountainCarContinuous) checkAction(action []float64) error {
	_, err := boxAction(e.spec.Name, action, e.actSpace)
	return err
}

func (e *MountainCarContinuous) resetInto(seed int64, obs []float64) {
	e.begin(seed)
	e.pos, e.vel = e.uniform(-0.6, -0.4), 0
	obs[0], obs[1] = e.pos, e.vel
}

func (e *MountainCarContinuous) stepInto(action []float64, obs []float64) (float64, bool, bool) {
	force := action[0]
	vel := e.vel + (force*mccPower - mcGravity*math.Cos(3*e.pos))
	vel = clamp(vel, -mcMaxSpeed, mcMaxSpeed)
	pos := clamp(e.pos+vel, mcMinPosition, mcMaxPosition)
	if pos == mcMinPosition && vel < 0 {
		vel = 0
	}
	terminated := pos >= mccGoal && vel >= e.goalVelocity
	reward := 0.0
	if terminated {
		reward = 100
	}
	reward -= force * force * 0.1
	// Gymnasium keeps this environment's state in float32 between steps;
	// rounding the same way keeps trajectories identical to its own.
	e.pos, e.vel = float64(float32(pos)), float64(float32(vel))
	obs[0], obs[1] = e.pos, e.vel
	return reward, terminated, e.finish(terminated)
}

// Render implements Renderer: a 600×400 picture of the hill, car and flag.
func (e *MountainCarContinuous) Render() (image.Image, error) {
	return renderMountain(e.pos, mccGoal), nil
}

func mcHeight(x float64) float64 { return math.Sin(3*x)*0.45 + 0.55 }

func renderMountain(pos, goal float64) image.Image {
	const w, h = 600, 400
	c := newCanvas(w, h)
	scale := w / (mcMaxPosition - mcMinPosition)
	toImg := func(x, y float64) (float64, float64) { return (x - mcMinPosition) * scale, h - y*scale }
	px, py := toImg(mcMinPosition, mcHeight(mcMinPosition))
	for i := 1; i <= 100; i++ {
		x := mcMinPosition + float64(i)*(mcMaxPosition-mcMinPosition)/100
		nx, ny := toImg(x, mcHeight(x))
		c.line(px, py, nx, ny, 2, black)
		px, py = nx, ny
	}
	// The car sits on the slope, tilted along it.
	cx, cy := toImg(pos, mcHeight(pos))
	ang := math.Atan(1.35 * math.Cos(3*pos)) // slope of the height curve
	dx, dy := math.Cos(ang), -math.Sin(ang)
	nx, ny := math.Sin(ang), math.Cos(ang) // normal pointing up in the image
	c.line(cx-20*dx-18*nx, cy-20*dy-18*ny, cx+20*dx-18*nx, cy+20*dy-18*ny, 20, black)
	c.disc(cx-10*dx-5*nx, cy-10*dy-5*ny, 8, wheelGrey)
	c.disc(cx+10*dx-5*nx, cy+10*dy-5*ny, 8, wheelGrey)
	fx, fy := toImg(goal, mcHeight(goal))
	c.line(fx, fy, fx, fy-50, 2, black)
	c.triangle(fx, fy-50, fx, fy-40, fx+25, fy-45, flagYellow)
	return c.img
}
