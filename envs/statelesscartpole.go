package envs

// statelessCartPoleSpec registers StatelessCartPole-v1 with CartPole-v1's
// time limit and solved threshold.
var statelessCartPoleSpec = Spec{Name: "StatelessCartPole-v1", MaxEpisodeSteps: 500, RewardThreshold: 475, HasRewardThreshold: true}

func init() {
	Register(statelessCartPoleSpec.Name, func(cfg Config) (Env, error) {
		return newStatelessCartPole(statelessCartPoleSpec, cfg)
	})
}

// StatelessCartPole is CartPole-v1 with the velocities hidden: the
// observation is [x, θ], the cart's position and the pole's angle. The
// dynamics, rewards, termination and time limit are CartPole's. A
// feed-forward policy sees only a snapshot and cannot tell which way the
// pole is swinging, so solving it takes memory (a recurrent policy, or
// frame stacking): the classic test that a policy keeps state (RLlib's
// StatelessCartPole example environment).
type StatelessCartPole struct {
	CartPole
	full     [4]float64
	obsSpace Box
}

func newStatelessCartPole(spec Spec, cfg Config) (Env, error) {
	inner, err := newCartPole(spec, cfg)
	if err != nil {
		return nil, err
	}
	e := &StatelessCartPole{CartPole: *inner.(*CartPole)}
	// The copy's random generator must draw from the copy's own source.
	e.init(spec, e.maxSteps)
	hi := []float64{cpXThreshold * 2, cpThetaThreshold * 2}
	e.obsSpace = NewBoxBounds([]float64{-hi[0], -hi[1]}, hi)
	return e, nil
}

// ObservationSpace implements Env: Box of [x, θ].
func (e *StatelessCartPole) ObservationSpace() Space { return e.obsSpace }

// Reset implements Env.
func (e *StatelessCartPole) Reset(seed int64) ([]float64, error) { return resetAlloc(e, seed), nil }

// Step implements Env.
func (e *StatelessCartPole) Step(action []float64) (Step, error) {
	return stepAlloc(e, &e.episode, action)
}

func (e *StatelessCartPole) obsSize() int { return 2 }

func (e *StatelessCartPole) resetInto(seed int64, obs []float64) {
	e.CartPole.resetInto(seed, e.full[:])
	e.hide(obs)
}

func (e *StatelessCartPole) stepInto(action []float64, obs []float64) (float64, bool, bool) {
	r, term, trunc := e.CartPole.stepInto(action, e.full[:])
	e.hide(obs)
	return r, term, trunc
}

// hide writes the observed part of the full state, [x, θ].
func (e *StatelessCartPole) hide(obs []float64) {
	_ = obs[1]
	obs[0], obs[1] = e.full[0], e.full[2]
}

var _ flatEnv = (*StatelessCartPole)(nil)
