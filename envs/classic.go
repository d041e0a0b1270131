package envs

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
)

// Spec describes a registered environment the way Gymnasium's EnvSpec does:
// its time limit and the mean return at which it counts as solved.
type Spec struct {
	// Name is the versioned name, e.g. "CartPole-v1".
	Name string
	// MaxEpisodeSteps is the time limit: an episode that has not terminated
	// after this many steps is truncated.
	MaxEpisodeSteps int
	// RewardThreshold is the mean episode return at which the environment
	// counts as solved; meaningful only when HasRewardThreshold is true
	// (Pendulum-v1 has none).
	RewardThreshold    float64
	HasRewardThreshold bool
}

// Specer is implemented by environments that know their Spec (every
// built-in one does).
type Specer interface {
	Spec() Spec
}

// classicSpecs are Gymnasium's registrations of the classic-control set.
//
// The dynamics run in float64 as Gymnasium's do; observations stay float64
// where Gymnasium hands out float32 copies. Where Gymnasium keeps float32
// state (MountainCarContinuous between steps, Acrobot's initial state) the
// built-ins round the same way, so trajectories match Gymnasium's to
// float32 precision at worst.
var classicSpecs = []Spec{
	{Name: "CartPole-v0", MaxEpisodeSteps: 200, RewardThreshold: 195, HasRewardThreshold: true},
	{Name: "CartPole-v1", MaxEpisodeSteps: 500, RewardThreshold: 475, HasRewardThreshold: true},
	{Name: "Pendulum-v1", MaxEpisodeSteps: 200},
	{Name: "MountainCar-v0", MaxEpisodeSteps: 200, RewardThreshold: -110, HasRewardThreshold: true},
	{Name: "MountainCarContinuous-v0", MaxEpisodeSteps: 999, RewardThreshold: 90, HasRewardThreshold: true},
	{Name: "Acrobot-v1", MaxEpisodeSteps: 500, RewardThreshold: -100, HasRewardThreshold: true},
}

func init() {
	makers := map[string]func(Spec, Config) (Env, error){
		"CartPole-v0":              newCartPole,
		"CartPole-v1":              newCartPole,
		"Pendulum-v1":              newPendulum,
		"MountainCar-v0":           newMountainCar,
		"MountainCarContinuous-v0": newMountainCarContinuous,
		"Acrobot-v1":               newAcrobot,
	}
	for _, spec := range classicSpecs {
		spec, mk := spec, makers[spec.Name]
		Register(spec.Name, func(cfg Config) (Env, error) { return mk(spec, cfg) })
	}
}

// flatEnv is the allocation-free fast path the serial Vector uses when every
// sub-environment is a built-in one: observations are written into buffers
// the caller owns instead of freshly allocated slices.
type flatEnv interface {
	Env
	obsSize() int
	// ready reports why the environment cannot be stepped now, if it cannot.
	ready() error
	// checkAction validates an action without changing any state, so that a
	// Vector can reject a bad batch before stepping any sub-environment.
	checkAction(action []float64) error
	resetInto(seed int64, obs []float64)
	stepInto(action []float64, obs []float64) (reward float64, terminated, truncated bool)
}

// phase is where an environment is in its episode life cycle.
type phase uint8

const (
	phaseNew     phase = iota // never reset
	phaseRunning              // stepping is allowed
	phaseEnded                // terminated or truncated; Reset is required
)

// episode is the bookkeeping every built-in environment shares: the random
// source, the step count behind the time limit, and the life-cycle phase.
type episode struct {
	spec     Spec
	maxSteps int
	steps    int
	phase    phase
	src      rand.PCG
	rng      *rand.Rand
}

func (e *episode) init(spec Spec, maxSteps int) {
	e.spec = spec
	e.maxSteps = maxSteps
	e.rng = rand.New(&e.src)
}

// Spec implements Specer; a max_episode_steps override is reflected.
func (e *episode) Spec() Spec {
	s := e.spec
	s.MaxEpisodeSteps = e.maxSteps
	return s
}

// begin reseeds the random source and starts an episode. The seed is
// scrambled so that neighbouring seeds (0, 1, 2, ...) give unrelated
// streams, which PCG seeded with raw neighbouring states would not.
func (e *episode) begin(seed int64) {
	s := uint64(seed)
	e.src.Seed(splitmix64(s), splitmix64(s^0x9e3779b97f4a7c15))
	e.steps = 0
	e.phase = phaseRunning
}

// uniform draws from U[lo, hi) as numpy's Generator.uniform does.
func (e *episode) uniform(lo, hi float64) float64 { return lo + (hi-lo)*e.rng.Float64() }

// ready reports why the environment cannot be stepped now, if it cannot.
func (e *episode) ready() error {
	switch e.phase {
	case phaseNew:
		return fmt.Errorf("envs: %s: Step called before Reset; call Reset(seed) first", e.spec.Name)
	case phaseEnded:
		return fmt.Errorf("envs: %s: Step called after the episode ended; call Reset(seed) to start a new one", e.spec.Name)
	}
	return nil
}

// finish counts a step and applies the time limit: truncated is true when
// the step count reaches the limit and the episode did not terminate, as
// Gymnasium's TimeLimit wrapper does.
func (e *episode) finish(terminated bool) (truncated bool) {
	e.steps++
	truncated = !terminated && e.maxSteps > 0 && e.steps >= e.maxSteps
	if terminated || truncated {
		e.phase = phaseEnded
	}
	return truncated
}

// badAction is the error for an action outside the action space.
func badAction(name string, action []float64, space Space) error {
	for _, a := range action {
		if math.IsNaN(a) {
			return fmt.Errorf("envs: %s: action %v contains NaN; the action space is %s", name, action, space)
		}
	}
	if len(action) != space.Size() {
		return fmt.Errorf("envs: %s: action %v has %d values, the action space %s needs %d",
			name, action, len(action), space, space.Size())
	}
	hint := ""
	if _, ok := space.(Box); ok {
		hint = " (clip continuous actions to the space, e.g. with Box.Clip)"
	}
	return fmt.Errorf("envs: %s: action %v is outside the action space %s%s", name, action, space, hint)
}

// discreteAction returns the index of a Discrete(n) action, or an error.
func discreteAction(name string, action []float64, n int) (int, error) {
	if len(action) == 1 {
		a := action[0]
		if a >= 0 && a < float64(n) && a == math.Trunc(a) {
			return int(a), nil
		}
	}
	return 0, badAction(name, action, Discrete{N: n})
}

// boxAction returns the single value of a one-dimensional Box[lo, hi]
// action, or an error.
func boxAction(name string, action []float64, space Box) (float64, error) {
	if len(action) == 1 {
		a := action[0]
		if a >= space.Low[0] && a <= space.High[0] { // false for NaN
			return a, nil
		}
	}
	return 0, badAction(name, action, space)
}

// stepAlloc implements Env.Step on top of the fast path.
func stepAlloc(f flatEnv, ep *episode, action []float64) (Step, error) {
	if err := ep.ready(); err != nil {
		return Step{}, err
	}
	if err := f.checkAction(action); err != nil {
		return Step{}, err
	}
	obs := make([]float64, f.obsSize())
	r, term, trunc := f.stepInto(action, obs)
	return Step{Obs: obs, Reward: r, Terminated: term, Truncated: trunc}, nil
}

// resetAlloc implements Env.Reset on top of the fast path.
func resetAlloc(f flatEnv, seed int64) []float64 {
	obs := make([]float64, f.obsSize())
	f.resetInto(seed, obs)
	return obs
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// configReader decodes an environment's Config strictly: every key must be
// known and well typed, so that a typo is an error rather than a silently
// ignored setting.
type configReader struct {
	name  string
	cfg   Config
	known []string
	err   error
}

func newConfigReader(name string, cfg Config) *configReader {
	return &configReader{name: name, cfg: cfg, known: []string{"max_episode_steps"}}
}

func (c *configReader) fail(key, want string, v any) {
	if c.err == nil {
		c.err = fmt.Errorf("envs: %s: config key %q must be %s, got %T %v", c.name, key, want, v, v)
	}
}

// int reads an integer key; JSON numbers arrive as float64 and are accepted
// when integral.
func (c *configReader) int(key string, def int) int {
	c.known = append(c.known, key)
	v, ok := c.cfg[key]
	if !ok {
		return def
	}
	switch x := v.(type) {
	case int:
		return x
	case int64:
		return int(x)
	case int32:
		return int(x)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int(x)
		}
	}
	c.fail(key, "an integer", v)
	return def
}

func (c *configReader) float(key string, def float64) float64 {
	c.known = append(c.known, key)
	v, ok := c.cfg[key]
	if !ok {
		return def
	}
	switch x := v.(type) {
	case float64:
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			return x
		}
	case float32:
		return float64(x)
	case int:
		return float64(x)
	case int64:
		return float64(x)
	}
	c.fail(key, "a finite number", v)
	return def
}

func (c *configReader) bool(key string, def bool) bool {
	c.known = append(c.known, key)
	v, ok := c.cfg[key]
	if !ok {
		return def
	}
	if b, ok := v.(bool); ok {
		return b
	}
	c.fail(key, "a boolean", v)
	return def
}

// done returns the first error met, or an error naming an unknown key.
func (c *configReader) done() error {
	if c.err != nil {
		return c.err
	}
	for key := range c.cfg {
		found := false
		for _, k := range c.known {
			if k == key {
				found = true
				break
			}
		}
		if !found {
			known := append([]string(nil), c.known...)
			sort.Strings(known)
			return fmt.Errorf("envs: %s: unknown config key %q; known keys: %s", c.name, key, strings.Join(known, ", "))
		}
	}
	return nil
}

// maxSteps reads max_episode_steps (the time limit; default the spec's).
func (c *configReader) maxSteps(spec Spec) int {
	n := c.int("max_episode_steps", spec.MaxEpisodeSteps)
	c.known = c.known[:len(c.known)-1] // listed once, by newConfigReader
	if n < 1 && c.err == nil {
		c.err = fmt.Errorf("envs: %s: config key \"max_episode_steps\" must be at least 1, got %d", c.name, n)
	}
	return n
}
