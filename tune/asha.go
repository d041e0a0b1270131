package tune

import (
	"fmt"
	"math"
	"sort"
)

// ASHAConfig configures asynchronous successive halving.
type ASHAConfig struct {
	// TimeAttr measures progress (default training_iteration).
	TimeAttr string `json:"time_attr" yaml:"time_attr"`
	// MaxT: trials are stopped at this time (default 100).
	MaxT float64 `json:"max_t" yaml:"max_t"`
	// GracePeriod: the first rung; no trial stops before it (default 1).
	GracePeriod float64 `json:"grace_period" yaml:"grace_period"`
	// ReductionFactor: each rung keeps the top 1/ReductionFactor (default 4).
	ReductionFactor float64 `json:"reduction_factor" yaml:"reduction_factor"`
	// Brackets: number of brackets with staggered rungs (default 1).
	Brackets int `json:"brackets" yaml:"brackets"`
}

// ASHA is asynchronous successive halving (Li et al., 2018): rungs at
// GracePeriod * ReductionFactor^k; a trial reaching a rung continues only
// if its score is in the top 1/ReductionFactor of those recorded there so
// far. Promotion is decided on arrival, so no trial ever waits for others.
type ASHA struct {
	metricBase
	cfg      ASHAConfig
	brackets []*ashaBracket
	byTrial  map[string]*ashaBracket
	added    int
}

type ashaRung struct {
	milestone float64
	recorded  map[string]float64
}

type ashaBracket struct {
	rungs []*ashaRung // highest milestone first
}

// NewASHA validates cfg and fills defaults.
func NewASHA(cfg ASHAConfig) (*ASHA, error) {
	if cfg.MaxT == 0 {
		cfg.MaxT = 100
	}
	if cfg.GracePeriod == 0 {
		cfg.GracePeriod = 1
	}
	if cfg.ReductionFactor == 0 {
		cfg.ReductionFactor = 4
	}
	if cfg.Brackets == 0 {
		cfg.Brackets = 1
	}
	switch {
	case cfg.MaxT < 0:
		return nil, fmt.Errorf("tune: asha max_t must be > 0, got %g", cfg.MaxT)
	case cfg.GracePeriod < 0 || cfg.GracePeriod > cfg.MaxT:
		return nil, fmt.Errorf("tune: asha grace_period must be in (0, max_t=%g], got %g", cfg.MaxT, cfg.GracePeriod)
	case cfg.ReductionFactor <= 1:
		return nil, fmt.Errorf("tune: asha reduction_factor must be > 1, got %g", cfg.ReductionFactor)
	case cfg.Brackets < 1:
		return nil, fmt.Errorf("tune: asha brackets must be >= 1, got %d", cfg.Brackets)
	}
	a := &ASHA{metricBase: metricBase{timeAttr: cfg.TimeAttr}, cfg: cfg, byTrial: map[string]*ashaBracket{}}
	maxRungs := int(math.Log(cfg.MaxT/cfg.GracePeriod)/math.Log(cfg.ReductionFactor) + 1 + 1e-9)
	for s := 0; s < cfg.Brackets; s++ {
		b := &ashaBracket{}
		for k := maxRungs - s - 1; k >= 0; k-- {
			m := cfg.GracePeriod * math.Pow(cfg.ReductionFactor, float64(k+s))
			if m >= cfg.MaxT {
				continue
			}
			b.rungs = append(b.rungs, &ashaRung{milestone: m, recorded: map[string]float64{}})
		}
		a.brackets = append(a.brackets, b)
	}
	return a, nil
}

// Milestones returns the rung times of bracket s, lowest first.
func (a *ASHA) Milestones(s int) []float64 {
	var out []float64
	for i := len(a.brackets[s].rungs) - 1; i >= 0; i-- {
		out = append(out, a.brackets[s].rungs[i].milestone)
	}
	return out
}

// OnTrialAdd implements Scheduler: brackets are assigned round-robin, which
// keeps the assignment reproducible on resume.
func (a *ASHA) OnTrialAdd(t *Trial) {
	if _, ok := a.byTrial[t.ID]; ok {
		return
	}
	a.byTrial[t.ID] = a.brackets[a.added%len(a.brackets)]
	a.added++
}

// OnTrialResult implements Scheduler.
func (a *ASHA) OnTrialResult(_ Controller, t *Trial, result map[string]any) Decision {
	now, score, ok := a.read(result)
	if !ok {
		return Continue
	}
	if now >= a.cfg.MaxT {
		return Stop
	}
	b := a.byTrial[t.ID]
	if b == nil {
		a.OnTrialAdd(t)
		b = a.byTrial[t.ID]
	}
	for _, r := range b.rungs {
		if now < r.milestone {
			continue
		}
		if _, done := r.recorded[t.ID]; done {
			// Already judged at this rung (and every lower one).
			break
		}
		cutoff, has := topCutoff(r.recorded, a.cfg.ReductionFactor)
		r.recorded[t.ID] = score
		if has && score < cutoff {
			return Stop
		}
		break
	}
	return Continue
}

// topCutoff is the (1 - 1/rf) percentile of the recorded scores, linearly
// interpolated as numpy's percentile.
func topCutoff(recorded map[string]float64, rf float64) (float64, bool) {
	if len(recorded) == 0 {
		return 0, false
	}
	vals := make([]float64, 0, len(recorded))
	for _, v := range recorded {
		vals = append(vals, v)
	}
	sort.Float64s(vals)
	return percentile(vals, 1-1/rf), true
}

func percentile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	return sorted[lo] + (pos-float64(lo))*(sorted[hi]-sorted[lo])
}

// OnTrialComplete implements Scheduler.
func (a *ASHA) OnTrialComplete(Controller, *Trial, map[string]any) {}

// ChooseTrialToRun implements Scheduler.
func (a *ASHA) ChooseTrialToRun(w []*Trial) *Trial { return FIFO{}.ChooseTrialToRun(w) }
