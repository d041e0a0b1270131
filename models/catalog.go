package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"

	"github.com/gray-ml/gray/spaces"
)

// The distribution types ActionDistFor accepts besides the default "".
const (
	DistCategorical   = "categorical"
	DistDiagGaussian  = "diag_gaussian"
	DistDeterministic = "deterministic"
)

// ActionDistFor returns the action distribution for an action space and,
// through its InputSize, the number of model outputs it needs:
// Discrete(n) gives Categorical (n inputs), Box with k values gives
// DiagGaussian (2k inputs: k means, k log stds; with free_log_std the model
// still has 2k outputs, the last k being free parameters). distType ""
// picks that default; "deterministic" picks Deterministic (k inputs) for a
// Box, as ES uses.
func ActionDistFor(space spaces.Space, distType string) (ActionDist, error) {
	switch s := space.(type) {
	case spaces.Discrete:
		if s.N <= 0 {
			return nil, fmt.Errorf("models: action space %v has no actions", s)
		}
		switch distType {
		case "", DistCategorical:
			return Categorical{N: s.N}, nil
		}
	case spaces.Box:
		k := s.Size()
		if k <= 0 {
			return nil, fmt.Errorf("models: action space %v is empty", s)
		}
		switch distType {
		case "", DistDiagGaussian:
			return DiagGaussian{K: k}, nil
		case DistDeterministic:
			return Deterministic{K: k}, nil
		}
	default:
		return nil, fmt.Errorf("models: no action distribution for action space %v (%T); supported: Discrete, Box", space, space)
	}
	return nil, fmt.Errorf("models: distribution %q does not fit action space %v; use %q for Discrete, %q or %q for Box",
		distType, space, DistCategorical, DistDiagGaussian, DistDeterministic)
}

// NewModel returns a model for observations of the given shape (after
// preprocessing) producing numOutputs outputs: the custom model
// opts.CustomModel when it is set (built by the ModelResolver registered
// for its prefix, such as "plugin:<path>"), an LSTMNet when opts.UseLSTM
// is set (flat observations only), a ConvNet for image shapes [H, W, C]
// (C ≤ 16, H and W above 1, or any [H, W, C] when conv_filters are set),
// otherwise a FullyConnected network on the flattened observation.
// conv_filters with observations that are not [H, W, C] are an error.
func NewModel(obsShape []int, numOutputs int, opts ModelOptions, seed uint64) (Model, error) {
	if opts.CustomModel != "" {
		if opts.UseLSTM {
			return nil, fmt.Errorf("models: use_lstm with custom_model %q: a custom model cannot be wrapped in an LSTM; drop one of the two", opts.CustomModel)
		}
		return newCustomModel(obsShape, numOutputs, opts, seed)
	}
	if opts.UseLSTM {
		if len(obsShape) == 3 && obsShape[0] > 1 && obsShape[1] > 1 {
			return nil, fmt.Errorf("models: use_lstm with image observations %v: the LSTM wraps fully connected layers only; drop use_lstm or flatten the observation", obsShape)
		}
		n, err := flatSize(obsShape)
		if err != nil {
			return nil, err
		}
		return NewLSTMNet(n, numOutputs, opts, seed)
	}
	image := len(obsShape) == 3 && obsShape[0] > 1 && obsShape[1] > 1 && obsShape[2] >= 1 && obsShape[2] <= 16
	if len(opts.ConvFilters) > 0 && len(obsShape) != 3 {
		return nil, fmt.Errorf("models: conv_filters is set, but the observations (shape %v after preprocessing) are not images [height, width, channels]; remove conv_filters for a fully connected network", obsShape)
	}
	if image || len(opts.ConvFilters) > 0 {
		return NewConvNet(obsShape, numOutputs, opts, seed)
	}
	n, err := flatSize(obsShape)
	if err != nil {
		return nil, err
	}
	return NewFullyConnected(n, numOutputs, opts, seed)
}

// flatSize is the number of values in an observation of shape obsShape.
func flatSize(obsShape []int) (int, error) {
	if len(obsShape) == 0 {
		return 0, fmt.Errorf("models: empty observation shape")
	}
	n := 1
	for _, d := range obsShape {
		if d <= 0 {
			return 0, fmt.Errorf("models: observation shape %v has a non-positive dimension", obsShape)
		}
		n *= d
	}
	return n, nil
}

// Policy bundles what an agent needs to act in an environment: the
// observation preprocessor, an optional observation filter, the model and
// the action distribution it feeds.
type Policy struct {
	Preprocessor Preprocessor
	// Filter, when set, normalises preprocessed observations (see
	// MeanStdFilter); Act updates it while exploring.
	Filter *MeanStdFilter
	Model  Model
	Dist   ActionDist
}

// Actions is what Policy.Act computes for a batch of observations. Act
// reuses its slices, so keep one per rollout loop.
type Actions struct {
	// Obs are the preprocessed (and filtered) observations, rows×Size:
	// what the learner trains on.
	Obs []float64
	// Actions are rows×Dist.ActionSize() values.
	Actions []float64
	// LogP is the log-likelihood of each action.
	LogP []float64
	// Values are the value estimates, nil unless the model has a value
	// function.
	Values []float64
	// DistInputs are the model outputs, rows×Dist.InputSize() (PPO keeps
	// them to compute the KL to the updated policy).
	DistInputs []float64
}

// Act runs the policy on raw observations (one row per environment, as
// envs.Vector returns them) on tape t, which it resets and runs without
// gradients. With explore it samples actions and updates the filter; without
// it takes each distribution's mode and leaves the filter unchanged.
// Policy is not safe for concurrent use; Model.Forward on separate tapes is.
// A recurrent model (use_lstm) acts here from its zero state, every call
// anew; callers that carry state use Recurrent.ForwardSeq, as PPO's and
// A3C's rollouts do.
func (p *Policy) Act(t *Tape, rng *rand.Rand, obs [][]float64, explore bool, dst *Actions) error {
	rows, size := len(obs), p.Preprocessor.Size()
	dst.Obs = grow(dst.Obs, rows*size)
	for i, o := range obs {
		row := dst.Obs[i*size : (i+1)*size]
		if err := p.Preprocessor.Transform(o, row); err != nil {
			return fmt.Errorf("observation %d: %w", i, err)
		}
		if p.Filter != nil {
			if err := p.Filter.Apply(row, explore); err != nil {
				return fmt.Errorf("observation %d: %w", i, err)
			}
		}
	}
	prev := t.noGrad
	t.SetNoGrad(true)
	defer t.SetNoGrad(prev)
	t.Reset()
	out := p.Model.Forward(t, t.Const(rows, size, dst.Obs))
	dst.DistInputs = append(dst.DistInputs[:0], out.Out.Data...)
	dst.Actions = grow(dst.Actions, rows*p.Dist.ActionSize())
	var err error
	if explore {
		if rng == nil {
			return fmt.Errorf("models: Policy.Act: exploring needs a random source")
		}
		err = p.Dist.Sample(rng, dst.DistInputs, dst.Actions)
	} else {
		err = p.Dist.Mode(dst.DistInputs, dst.Actions)
	}
	if err != nil {
		return err
	}
	dst.LogP = grow(dst.LogP, rows)
	if err := p.Dist.LogProb(dst.DistInputs, dst.Actions, dst.LogP); err != nil {
		return err
	}
	if out.Value != nil {
		dst.Values = append(dst.Values[:0], out.Value.Data...)
	} else {
		dst.Values = dst.Values[:0]
	}
	return nil
}

func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// NewPolicy builds the catalog's choices for an environment's spaces:
// PreprocessorFor(envName, obs, opts.Image()), the action distribution (opts'
// custom_action_dist when set, see NewActionDist, otherwise
// ActionDistFor(act, distType)) and NewModel on the preprocessed shape
// with Dist.InputSize() outputs. Set opts.Value for a value function. A
// custom distribution holding outside resources is released with
// CloseActionDist.
func NewPolicy(envName string, obs, act spaces.Space, distType string, opts ModelOptions, seed uint64) (*Policy, error) {
	pre, err := PreprocessorFor(envName, obs, opts.Image())
	if err != nil {
		return nil, err
	}
	if sp, ok := pre.(StreamPreprocessor); ok && sp.Stateful() {
		return nil, fmt.Errorf("models: framestack and frame_diff need an algorithm that tracks episodes per environment (PPO); remove them from the model config")
	}
	var dist ActionDist
	switch {
	case opts.CustomActionDist != "" && distType != "":
		return nil, fmt.Errorf("models: custom_action_dist %q and distribution type %q both given; use one", opts.CustomActionDist, distType)
	case opts.CustomActionDist != "":
		dist, err = NewActionDist(act, opts)
	default:
		dist, err = ActionDistFor(act, distType)
	}
	if err != nil {
		return nil, err
	}
	model, err := NewModel(pre.Shape(), dist.InputSize(), opts, seed)
	if err != nil {
		_ = CloseActionDist(dist)
		return nil, err
	}
	return &Policy{Preprocessor: pre, Model: model, Dist: dist}, nil
}

// Preprocessor turns an environment's raw observation into the flat vector
// the model reads.
type Preprocessor interface {
	// Shape is the shape of a transformed observation.
	Shape() []int
	// Size is the number of values in a transformed observation.
	Size() int
	// Transform writes the transformed obs into dst (len ≥ Size()).
	Transform(obs, dst []float64) error
}

// Flatten passes a Box observation through as a flat vector, checking its
// length and rejecting NaN.
type Flatten struct{ Space spaces.Box }

// Shape implements Preprocessor.
func (p Flatten) Shape() []int { return []int{p.Space.Size()} }

// Size implements Preprocessor.
func (p Flatten) Size() int { return p.Space.Size() }

// Transform implements Preprocessor.
func (p Flatten) Transform(obs, dst []float64) error {
	n := p.Space.Size()
	if len(obs) != n {
		return fmt.Errorf("models: observation has %d values, space %v has %d", len(obs), p.Space, n)
	}
	if len(dst) < n {
		return fmt.Errorf("models: preprocessor output buffer holds %d values, needs %d", len(dst), n)
	}
	for i, v := range obs {
		if math.IsNaN(v) {
			return fmt.Errorf("models: observation value %d is NaN", i)
		}
		dst[i] = v
	}
	return nil
}

// OneHot turns a Discrete observation into a one-hot vector of length N.
type OneHot struct{ N int }

// Shape implements Preprocessor.
func (p OneHot) Shape() []int { return []int{p.N} }

// Size implements Preprocessor.
func (p OneHot) Size() int { return p.N }

// Transform implements Preprocessor.
func (p OneHot) Transform(obs, dst []float64) error {
	if len(obs) != 1 {
		return fmt.Errorf("models: discrete observation must be one value, got %d", len(obs))
	}
	k := int(obs[0])
	if float64(k) != obs[0] || k < 0 || k >= p.N {
		return fmt.Errorf("models: observation %v is outside Discrete(%d)", obs[0], p.N)
	}
	if len(dst) < p.N {
		return fmt.Errorf("models: preprocessor output buffer holds %d values, needs %d", len(dst), p.N)
	}
	clear(dst[:p.N])
	dst[k] = 1
	return nil
}

// NewPreprocessor returns the default preprocessor for an observation
// space: an ImagePreprocessor with default ImageOptions for images (see
// IsImage), Flatten for any other Box, OneHot for a Discrete.
func NewPreprocessor(space spaces.Space) (Preprocessor, error) {
	switch s := space.(type) {
	case spaces.Box:
		if s.Size() == 0 {
			return nil, fmt.Errorf("models: observation space %v is empty", s)
		}
		if IsImage(s) {
			return NewImagePreprocessor(s, ImageOptions{})
		}
		return Flatten{Space: s}, nil
	case spaces.Discrete:
		if s.N <= 0 {
			return nil, fmt.Errorf("models: observation space %v is empty", s)
		}
		return OneHot{N: s.N}, nil
	}
	return nil, fmt.Errorf("models: no preprocessor for observation space %v (%T); register one with RegisterPreprocessor", space, space)
}

// PreprocessorFactory builds a preprocessor for an environment's
// observation space; options come from the user's model config.
type PreprocessorFactory func(space spaces.Space, options map[string]any) (Preprocessor, error)

var preprocessors = struct {
	sync.RWMutex
	byEnv map[string]PreprocessorFactory
}{byEnv: map[string]PreprocessorFactory{}}

// RegisterPreprocessor makes f the preprocessor of the environment named
// envName, overriding the default for its space. Registering a name again
// replaces the earlier factory.
func RegisterPreprocessor(envName string, f PreprocessorFactory) {
	preprocessors.Lock()
	defer preprocessors.Unlock()
	preprocessors.byEnv[envName] = f
}

// PreprocessorNames lists the environments with a registered preprocessor.
func PreprocessorNames() []string {
	preprocessors.RLock()
	defer preprocessors.RUnlock()
	names := make([]string, 0, len(preprocessors.byEnv))
	for n := range preprocessors.byEnv {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// GetPreprocessor returns the preprocessor registered for envName, or the
// default one for space.
func GetPreprocessor(envName string, space spaces.Space, options map[string]any) (Preprocessor, error) {
	preprocessors.RLock()
	f, ok := preprocessors.byEnv[envName]
	preprocessors.RUnlock()
	if !ok {
		return NewPreprocessor(space)
	}
	p, err := f(space, options)
	if err != nil {
		return nil, fmt.Errorf("models: preprocessor registered for %q: %w", envName, err)
	}
	if p == nil || p.Size() <= 0 {
		return nil, fmt.Errorf("models: preprocessor registered for %q returned no usable preprocessor", envName)
	}
	return p, nil
}
