package tune

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
)

// ErrSearchDone is returned by Searcher.Suggest when no more trials will be
// suggested.
var ErrSearchDone = errors.New("tune: search finished")

// Searcher suggests trial configurations. Suggest returning (nil, nil)
// means "none right now, ask again after the next result". Searchers must
// be deterministic given their seed and the sequence of calls: resume
// rebuilds their state by replaying the journal's calls.
type Searcher interface {
	// Suggest returns the resolved config of a new trial, nil for "not now",
	// or ErrSearchDone.
	Suggest(trialID string) (map[string]any, error)
	// OnTrialResult is called for every intermediate result.
	OnTrialResult(trialID string, result map[string]any)
	// OnTrialComplete is called once when a trial ends; result is its last
	// result (nil if it reported none); failed tells an error end.
	OnTrialComplete(trialID string, result map[string]any, failed bool)
}

// metricSetter is implemented by searchers that need the experiment's
// metric and mode; the runner calls it before the first Suggest.
type metricSetter interface {
	setMetric(metric string, mode Mode) error
}

// Mode says whether a metric is maximised or minimised.
type Mode string

// The two modes.
const (
	Max Mode = "max"
	Min Mode = "min"
)

func (m Mode) valid() bool { return m == Max || m == Min }

// score turns a metric value into "higher is better".
func (m Mode) score(v float64) float64 {
	if m == Min {
		return -v
	}
	return v
}

// BasicVariantGenerator expands grid_search values into their cartesian
// product, repeats it NumSamples times, and samples every other domain
// afresh for each variant.
type BasicVariantGenerator struct {
	space      map[string]any
	grids      []leaf
	numSamples int
	seed       uint64
	n          int // variants handed out
	total      int
	rng        *rand.Rand
}

// NewBasicVariantGenerator makes the default searcher. numSamples < 1 is
// taken as 1.
func NewBasicVariantGenerator(space map[string]any, numSamples int, seed int64) (*BasicVariantGenerator, error) {
	if numSamples < 1 {
		numSamples = 1
	}
	g := &BasicVariantGenerator{space: space, numSamples: numSamples, seed: uint64(seed)}
	var leaves []leaf
	findDomains(space, nil, &leaves)
	total := 1
	for _, l := range leaves {
		if gs, ok := l.domain.(GridSearch); ok {
			if len(gs.Values) == 0 {
				return nil, fmt.Errorf("tune: grid_search at %s is empty", pathString(l.path))
			}
			g.grids = append(g.grids, l)
			total *= len(gs.Values)
		}
	}
	g.total = total * numSamples
	g.rng = rand.New(rand.NewPCG(g.seed, 0x7475_6e65))
	return g, nil
}

// Total is the number of variants this generator yields.
func (g *BasicVariantGenerator) Total() int { return g.total }

// Suggest implements Searcher.
func (g *BasicVariantGenerator) Suggest(string) (map[string]any, error) {
	if g.n >= g.total {
		return nil, ErrSearchDone
	}
	idx := g.n % (g.total / g.numSamples)
	g.n++
	cfg := deepCopy(g.space).(map[string]any)
	// Mixed-radix index over the grids, last grid varying fastest.
	for i := len(g.grids) - 1; i >= 0; i-- {
		vals := g.grids[i].domain.(GridSearch).Values
		setPath(cfg, g.grids[i].path, deepCopy(vals[idx%len(vals)]))
		idx /= len(vals)
	}
	if err := resolve(cfg, g.rng); err != nil {
		return nil, err
	}
	return cfg, nil
}

// OnTrialResult implements Searcher; random search ignores results.
func (g *BasicVariantGenerator) OnTrialResult(string, map[string]any) {}

// OnTrialComplete implements Searcher.
func (g *BasicVariantGenerator) OnTrialComplete(string, map[string]any, bool) {}

// ConcurrencyLimiter lets at most Max trials of the wrapped searcher be
// live at once: model-based searchers learn more from finished trials.
type ConcurrencyLimiter struct {
	Searcher Searcher
	Max      int
	live     map[string]bool
}

// NewConcurrencyLimiter wraps s.
func NewConcurrencyLimiter(s Searcher, max int) (*ConcurrencyLimiter, error) {
	if max < 1 {
		return nil, fmt.Errorf("tune: max_concurrent must be at least 1, got %d", max)
	}
	return &ConcurrencyLimiter{Searcher: s, Max: max, live: map[string]bool{}}, nil
}

// Suggest implements Searcher.
func (c *ConcurrencyLimiter) Suggest(id string) (map[string]any, error) {
	if len(c.live) >= c.Max {
		return nil, nil
	}
	cfg, err := c.Searcher.Suggest(id)
	if cfg != nil {
		c.live[id] = true
	}
	return cfg, err
}

// OnTrialResult implements Searcher.
func (c *ConcurrencyLimiter) OnTrialResult(id string, r map[string]any) {
	c.Searcher.OnTrialResult(id, r)
}

// OnTrialComplete implements Searcher.
func (c *ConcurrencyLimiter) OnTrialComplete(id string, r map[string]any, failed bool) {
	if !c.live[id] {
		return
	}
	delete(c.live, id)
	c.Searcher.OnTrialComplete(id, r, failed)
}

func (c *ConcurrencyLimiter) setMetric(metric string, mode Mode) error {
	if ms, ok := c.Searcher.(metricSetter); ok {
		return ms.setMetric(metric, mode)
	}
	return nil
}

// trialIDString formats the n-th trial's ID.
func trialIDString(n int) string {
	s := strconv.Itoa(n)
	for len(s) < 5 {
		s = "0" + s
	}
	return s
}
