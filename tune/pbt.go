package tune

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
)

// PBTConfig configures population-based training.
type PBTConfig struct {
	// TimeAttr measures progress (default training_iteration).
	TimeAttr string `json:"time_attr" yaml:"time_attr"`
	// PerturbationInterval: a trial is considered for exploit/explore
	// every this much time (default 10).
	PerturbationInterval float64 `json:"perturbation_interval" yaml:"perturbation_interval"`
	// QuantileFraction: the bottom fraction copies the top fraction
	// (default 0.25, at most 0.5).
	QuantileFraction float64 `json:"quantile_fraction" yaml:"quantile_fraction"`
	// ResampleProbability: chance a mutated value is drawn afresh instead
	// of perturbed (default 0.25).
	ResampleProbability float64 `json:"resample_probability" yaml:"resample_probability"`
	// HyperparamMutations maps config keys (dotted for nested ones) to a
	// Domain or a list of allowed values.
	HyperparamMutations map[string]any `json:"hyperparam_mutations" yaml:"hyperparam_mutations"`
	// Seed makes exploration reproducible.
	Seed int64 `json:"seed" yaml:"seed"`
}

// PBT is population-based training (Jaderberg et al., 2017). Every
// PerturbationInterval a trial is checkpointed; if its score is in the
// bottom QuantileFraction it restarts from the checkpoint of a trial in the
// top fraction (exploit) with that trial's hyperparameters perturbed by
// x0.8 or x1.2, or moved one step in a list, or resampled (explore).
type PBT struct {
	metricBase
	cfg         PBTConfig
	rng         *rand.Rand
	lastPerturb map[string]float64
	lastScore   map[string]float64
	trials      map[string]*Trial
	// Exploits counts exploit steps, for tests and the status line.
	Exploits int
}

// NewPBT validates cfg and fills defaults.
func NewPBT(cfg PBTConfig) (*PBT, error) {
	if cfg.PerturbationInterval == 0 {
		cfg.PerturbationInterval = 10
	}
	if cfg.QuantileFraction == 0 {
		cfg.QuantileFraction = 0.25
	}
	if cfg.ResampleProbability == 0 {
		cfg.ResampleProbability = 0.25
	}
	switch {
	case cfg.PerturbationInterval < 0:
		return nil, fmt.Errorf("tune: pbt perturbation_interval must be > 0, got %g", cfg.PerturbationInterval)
	case cfg.QuantileFraction < 0 || cfg.QuantileFraction > 0.5:
		return nil, fmt.Errorf("tune: pbt quantile_fraction must be in (0, 0.5], got %g", cfg.QuantileFraction)
	case cfg.ResampleProbability < 0 || cfg.ResampleProbability > 1:
		return nil, fmt.Errorf("tune: pbt resample_probability must be in [0, 1], got %g", cfg.ResampleProbability)
	case len(cfg.HyperparamMutations) == 0:
		return nil, fmt.Errorf("tune: pbt needs hyperparam_mutations: the config keys it may change, each with a distribution or a list of values")
	}
	muts, err := parseValue(normalizeYAML(map[string]any(cfg.HyperparamMutations)), []string{"hyperparam_mutations"})
	if err != nil {
		return nil, err
	}
	cfg.HyperparamMutations = muts.(map[string]any)
	for k, m := range cfg.HyperparamMutations {
		switch m.(type) {
		case Domain, []any:
		default:
			return nil, fmt.Errorf("tune: pbt hyperparam_mutations.%s must be a distribution (e.g. {uniform: [0, 1]}) or a list of values, got %s", k, show(m))
		}
	}
	return &PBT{
		metricBase:  metricBase{timeAttr: cfg.TimeAttr},
		cfg:         cfg,
		rng:         rand.New(rand.NewPCG(uint64(cfg.Seed), 0x706274)),
		lastPerturb: map[string]float64{},
		lastScore:   map[string]float64{},
		trials:      map[string]*Trial{},
	}, nil
}

// OnTrialAdd implements Scheduler.
func (p *PBT) OnTrialAdd(t *Trial) { p.trials[t.ID] = t }

// OnTrialResult implements Scheduler.
func (p *PBT) OnTrialResult(ctl Controller, t *Trial, result map[string]any) Decision {
	now, score, ok := p.read(result)
	if !ok {
		return Continue
	}
	p.trials[t.ID] = t
	p.lastScore[t.ID] = score
	if last, seen := p.lastPerturb[t.ID]; now < p.cfg.PerturbationInterval || (seen && now-last < p.cfg.PerturbationInterval) {
		if seen && now < last {
			p.lastPerturb[t.ID] = now // restarted from an older checkpoint
		}
		return Continue
	}
	bottom, top := p.quantiles()
	in := false
	for _, b := range bottom {
		if b == t.ID {
			in = true
		}
	}
	if !in || len(top) == 0 {
		// Not exploiting: checkpoint so the bottom trials can copy it.
		p.lastPerturb[t.ID] = now
		_, _ = ctl.Checkpoint(t)
		return Continue
	}
	donor := p.trials[top[p.rng.IntN(len(top))]]
	cp, ok := donor.LatestCheckpoint()
	if !ok {
		// The donor has no checkpoint yet: try again at the next result.
		return Continue
	}
	p.lastPerturb[t.ID] = now
	cfg, err := p.explore(donor.Config)
	if err != nil {
		return Continue
	}
	p.Exploits++
	ctl.Reconfigure(t, cfg, cp)
	return Continue
}

// quantiles returns the IDs of the bottom and top QuantileFraction of the
// trials with a score.
func (p *PBT) quantiles() (bottom, top []string) {
	ids := make([]string, 0, len(p.lastScore))
	for id := range p.lastScore {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		si, sj := p.lastScore[ids[i]], p.lastScore[ids[j]]
		if si != sj {
			return si < sj
		}
		return ids[i] < ids[j]
	})
	if len(ids) <= 1 {
		return nil, nil
	}
	k := int(math.Ceil(float64(len(ids)) * p.cfg.QuantileFraction))
	if k > len(ids)/2 {
		k = len(ids) / 2
	}
	return ids[:k], ids[len(ids)-k:]
}

// explore returns a mutated copy of config.
func (p *PBT) explore(config map[string]any) (map[string]any, error) {
	out := deepCopy(config).(map[string]any)
	keys := make([]string, 0, len(p.cfg.HyperparamMutations))
	for k := range p.cfg.HyperparamMutations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cur, _ := Spec(out).Get(k)
		nv, err := p.mutate(p.cfg.HyperparamMutations[k], cur, Spec(out))
		if err != nil {
			return nil, fmt.Errorf("tune: pbt mutating %s: %w", k, err)
		}
		setDotted(out, k, nv)
	}
	return out, nil
}

func (p *PBT) mutate(m, cur any, spec Spec) (any, error) {
	resample := p.rng.Float64() < p.cfg.ResampleProbability
	up := p.rng.IntN(2) == 1
	switch d := m.(type) {
	case []any:
		idx := -1
		for i, v := range d {
			if reflect.DeepEqual(v, cur) || numEqual(v, cur) {
				idx = i
			}
		}
		if resample || idx < 0 {
			return d[p.rng.IntN(len(d))], nil
		}
		if up {
			idx = min(idx+1, len(d)-1)
		} else {
			idx = max(idx-1, 0)
		}
		return d[idx], nil
	case Choice:
		return p.mutate(d.Values, cur, spec)
	case Domain:
		f, isNum := toFloat(cur)
		if resample || !isNum {
			return d.Sample(p.rng, spec)
		}
		factor := 0.8
		if up {
			factor = 1.2
		}
		v := f * factor
		if _, isInt := cur.(int); isInt {
			return int(math.Round(v)), nil
		}
		if _, isInt := d.(RandInt); isInt {
			return int(math.Round(v)), nil
		}
		return v, nil
	}
	return cur, nil
}

func numEqual(a, b any) bool {
	fa, ok1 := toFloat(a)
	fb, ok2 := toFloat(b)
	return ok1 && ok2 && fa == fb
}

// setDotted sets a dotted key, creating intermediate maps.
func setDotted(cfg map[string]any, key string, v any) {
	parts := strings.Split(key, ".")
	cur := cfg
	for _, p := range parts[:len(parts)-1] {
		next, ok := cur[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[p] = next
		}
		cur = next
	}
	cur[parts[len(parts)-1]] = v
}

// OnTrialComplete implements Scheduler.
func (p *PBT) OnTrialComplete(Controller, *Trial, map[string]any) {}

// ChooseTrialToRun implements Scheduler.
func (p *PBT) ChooseTrialToRun(w []*Trial) *Trial { return FIFO{}.ChooseTrialToRun(w) }
