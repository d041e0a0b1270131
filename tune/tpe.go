package tune

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/stat/distuv"
)

// TPEConfig configures the Tree-structured Parzen Estimator searcher.
type TPEConfig struct {
	// NumSamples is the number of trials to suggest (default 10).
	NumSamples int `json:"num_samples" yaml:"num_samples"`
	// NStartup trials are sampled at random before the model is used
	// (default 10).
	NStartup int `json:"n_startup" yaml:"n_startup"`
	// Gamma is the fraction of observations counted as good (default 0.25).
	Gamma float64 `json:"gamma" yaml:"gamma"`
	// NCandidates drawn from the good density per suggestion; the one with
	// the highest good/bad density ratio is used (default 24).
	NCandidates int `json:"n_candidates" yaml:"n_candidates"`
	// Seed makes suggestions reproducible.
	Seed int64 `json:"seed" yaml:"seed"`
}

// TPE is the Tree-structured Parzen Estimator (Bergstra et al., 2011). It
// splits finished trials into good (top Gamma by the metric) and bad,
// models each parameter's density in both groups with a Parzen estimator
// (a Gaussian mixture with one component per observation plus a wide
// prior), and suggests the candidate maximising l(x)/g(x), which maximises
// expected improvement. Parameters are modelled independently; log-uniform
// ones in log space; choice parameters with smoothed category counts.
type TPE struct {
	space   map[string]any
	params  []tpeParam
	cfg     TPEConfig
	metric  string
	mode    Mode
	n       int
	pending map[string][]float64
	obs     []tpeObs
}

type tpeParam struct {
	leaf
	lo, hi  float64 // bounds in model space
	choices []any   // for Choice
	log     bool
	prior   *distuv.Normal // for Normal domains (unbounded)
}

type tpeObs struct {
	x     []float64
	score float64
}

// NewTPE makes a TPE searcher over space. Grid searches are not allowed
// (use choice).
func NewTPE(space map[string]any, cfg TPEConfig) (*TPE, error) {
	if cfg.NumSamples == 0 {
		cfg.NumSamples = 10
	}
	if cfg.NStartup == 0 {
		cfg.NStartup = 10
	}
	if cfg.Gamma == 0 {
		cfg.Gamma = 0.25
	}
	if cfg.NCandidates == 0 {
		cfg.NCandidates = 24
	}
	switch {
	case cfg.NumSamples < 1:
		return nil, fmt.Errorf("tune: tpe num_samples must be >= 1, got %d", cfg.NumSamples)
	case cfg.NStartup < 1:
		return nil, fmt.Errorf("tune: tpe n_startup must be >= 1, got %d", cfg.NStartup)
	case cfg.Gamma <= 0 || cfg.Gamma >= 1:
		return nil, fmt.Errorf("tune: tpe gamma must be in (0, 1), got %g", cfg.Gamma)
	case cfg.NCandidates < 1:
		return nil, fmt.Errorf("tune: tpe n_candidates must be >= 1, got %d", cfg.NCandidates)
	}
	t := &TPE{space: space, cfg: cfg, pending: map[string][]float64{}}
	var leaves []leaf
	findDomains(space, nil, &leaves)
	for _, l := range leaves {
		p := tpeParam{leaf: l}
		switch d := l.domain.(type) {
		case GridSearch:
			return nil, fmt.Errorf("tune: tpe cannot search grid_search at %s; use choice", pathString(l.path))
		case SampleFrom:
			continue
		case Uniform:
			p.lo, p.hi = d.Lo, d.Hi
		case QUniform:
			p.lo, p.hi = d.Lo, d.Hi
		case LogUniform:
			p.lo, p.hi, p.log = math.Log(d.Lo), math.Log(d.Hi), true
		case RandInt:
			p.lo, p.hi = float64(d.Lo)-0.5, float64(d.Hi)-0.5
		case Normal:
			p.prior = &distuv.Normal{Mu: d.Mean, Sigma: d.SD}
			p.lo, p.hi = d.Mean-6*d.SD, d.Mean+6*d.SD
		case QNormal:
			p.prior = &distuv.Normal{Mu: d.Mean, Sigma: d.SD}
			p.lo, p.hi = d.Mean-6*d.SD, d.Mean+6*d.SD
		case Choice:
			p.choices = d.Values
		default:
			return nil, fmt.Errorf("tune: tpe does not know domain %T at %s", d, pathString(l.path))
		}
		t.params = append(t.params, p)
	}
	return t, nil
}

func (t *TPE) setMetric(metric string, mode Mode) error {
	if metric == "" {
		return fmt.Errorf("tune: the tpe searcher needs a metric to optimise; set metric (and mode)")
	}
	if mode == "" {
		mode = Max
	}
	if !mode.valid() {
		return fmt.Errorf("tune: mode must be %q or %q, got %q", Max, Min, mode)
	}
	t.metric, t.mode = metric, mode
	return nil
}

// Suggest implements Searcher.
func (t *TPE) Suggest(id string) (map[string]any, error) {
	if t.n >= t.cfg.NumSamples {
		return nil, ErrSearchDone
	}
	rng := rand.New(rand.NewPCG(uint64(t.cfg.Seed), uint64(t.n)))
	t.n++
	cfg := deepCopy(t.space).(map[string]any)
	if len(t.obs) >= t.cfg.NStartup {
		good, bad := t.split()
		for i, p := range t.params {
			setPath(cfg, p.path, p.fromModel(t.bestCandidate(rng, p, column(good, i), column(bad, i))))
		}
	}
	if err := resolve(cfg, rng); err != nil {
		return nil, err
	}
	x := make([]float64, len(t.params))
	for i, p := range t.params {
		v, _ := Spec(cfg).Get(pathDotted(p.path))
		x[i] = p.toModel(v)
	}
	t.pending[id] = x
	return cfg, nil
}

func pathDotted(path []string) string {
	s := ""
	for i, p := range path {
		if i > 0 {
			s += "."
		}
		s += p
	}
	return s
}

func column(obs []tpeObs, i int) []float64 {
	out := make([]float64, len(obs))
	for j, o := range obs {
		out[j] = o.x[i]
	}
	return out
}

// split sorts observations by score and returns the top gamma as good.
func (t *TPE) split() (good, bad []tpeObs) {
	s := append([]tpeObs(nil), t.obs...)
	sort.SliceStable(s, func(i, j int) bool { return s[i].score > s[j].score })
	nGood := int(math.Ceil(t.cfg.Gamma * float64(len(s))))
	if nGood < 1 {
		nGood = 1
	}
	return s[:nGood], s[nGood:]
}

// toModel maps a config value into model space (category index for
// choices, log for log-uniform).
func (p tpeParam) toModel(v any) float64 {
	if p.choices != nil {
		for i, c := range p.choices {
			if show(c) == show(v) {
				return float64(i)
			}
		}
		return 0
	}
	f, _ := toFloat(v)
	if p.log {
		return math.Log(f)
	}
	return f
}

func (p tpeParam) fromModel(x float64) any {
	if p.choices != nil {
		return p.choices[int(x)]
	}
	switch d := p.domain.(type) {
	case LogUniform:
		return math.Min(math.Max(math.Exp(x), d.Lo), d.Hi)
	case QUniform:
		return quantize(x, d.Q, d.Lo, d.Hi)
	case QNormal:
		return math.Round(x/d.Q) * d.Q
	case RandInt:
		return min(max(int(math.Round(x)), d.Lo), d.Hi-1)
	}
	return x
}

func (t *TPE) bestCandidate(rng *rand.Rand, p tpeParam, good, bad []float64) float64 {
	if p.choices != nil {
		lp, gp := catProbs(good, len(p.choices)), catProbs(bad, len(p.choices))
		best, bestRatio := 0.0, math.Inf(-1)
		for c := 0; c < t.cfg.NCandidates; c++ {
			k := sampleCat(rng, lp)
			if r := math.Log(lp[k]) - math.Log(gp[k]); r > bestRatio {
				best, bestRatio = float64(k), r
			}
		}
		return best
	}
	l, g := newParzen(p, good), newParzen(p, bad)
	best, bestRatio := l.sample(rng), math.Inf(-1)
	for c := 0; c < t.cfg.NCandidates; c++ {
		x := l.sample(rng)
		if r := l.logPDF(x) - g.logPDF(x); r > bestRatio {
			best, bestRatio = x, r
		}
	}
	return best
}

// catProbs estimates category probabilities with one pseudo-count each.
func catProbs(xs []float64, k int) []float64 {
	p := make([]float64, k)
	for i := range p {
		p[i] = 1
	}
	for _, x := range xs {
		p[int(x)]++
	}
	floats.Scale(1/floats.Sum(p), p)
	return p
}

func sampleCat(rng *rand.Rand, p []float64) int {
	u := rng.Float64()
	for i, pi := range p {
		if u < pi {
			return i
		}
		u -= pi
	}
	return len(p) - 1
}

// parzen is a Gaussian mixture truncated to [lo, hi]: one component per
// observation plus the prior, equally weighted.
type parzen struct {
	comps   []distuv.Normal
	lo, hi  float64
	logNorm []float64 // log of each component's mass inside [lo, hi]
}

func newParzen(p tpeParam, xs []float64) *parzen {
	pz := &parzen{lo: p.lo, hi: p.hi}
	width := p.hi - p.lo
	prior := distuv.Normal{Mu: (p.lo + p.hi) / 2, Sigma: width}
	if p.prior != nil {
		prior = *p.prior
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	// Bandwidth: the larger gap to a neighbour, clipped (as hyperopt does)
	// so that components are neither spikes nor wider than the range.
	minBW := width / math.Min(100, float64(len(s)+1))
	for i, x := range s {
		left, right := x-p.lo, p.hi-x
		if i > 0 {
			left = x - s[i-1]
		}
		if i < len(s)-1 {
			right = s[i+1] - x
		}
		bw := math.Min(math.Max(math.Max(left, right), minBW), width)
		pz.comps = append(pz.comps, distuv.Normal{Mu: x, Sigma: bw})
	}
	pz.comps = append(pz.comps, prior)
	for _, c := range pz.comps {
		mass := c.CDF(pz.hi) - c.CDF(pz.lo)
		pz.logNorm = append(pz.logNorm, math.Log(math.Max(mass, 1e-300)))
	}
	return pz
}

func (pz *parzen) logPDF(x float64) float64 {
	terms := make([]float64, len(pz.comps))
	for i, c := range pz.comps {
		terms[i] = c.LogProb(x) - pz.logNorm[i]
	}
	return floats.LogSumExp(terms) - math.Log(float64(len(pz.comps)))
}

func (pz *parzen) sample(rng *rand.Rand) float64 {
	c := pz.comps[rng.IntN(len(pz.comps))]
	for range 100 {
		x := c.Mu + c.Sigma*rng.NormFloat64()
		if x >= pz.lo && x <= pz.hi {
			return x
		}
	}
	return math.Min(math.Max(c.Mu, pz.lo), pz.hi)
}

// OnTrialResult implements Searcher; TPE learns from final results only.
func (t *TPE) OnTrialResult(string, map[string]any) {}

// OnTrialComplete implements Searcher.
func (t *TPE) OnTrialComplete(id string, result map[string]any, failed bool) {
	x, ok := t.pending[id]
	if !ok {
		return
	}
	delete(t.pending, id)
	v, ok := ResultFloat(result, t.metric)
	if failed || !ok || math.IsNaN(v) {
		return
	}
	t.obs = append(t.obs, tpeObs{x: x, score: t.mode.score(v)})
}
