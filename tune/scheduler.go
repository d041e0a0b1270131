package tune

import (
	"fmt"
	"sort"
)

// Decision is a scheduler's verdict on a trial after one of its results.
type Decision int

// Decisions.
const (
	Continue Decision = iota
	Pause
	Stop
)

// String returns the decision in capitals: CONTINUE, PAUSE or STOP.
func (d Decision) String() string {
	return [...]string{"CONTINUE", "PAUSE", "STOP"}[d]
}

// Controller lets a scheduler act on trials beyond the decision it returns.
// Actions on other trials are applied after the scheduler call returns.
type Controller interface {
	// Checkpoint saves t now. t must be the trial whose result is being
	// handled. During resume replay it returns a zero Checkpoint.
	Checkpoint(t *Trial) (Checkpoint, error)
	// Reconfigure restarts t with config from checkpoint cp (PBT's
	// exploit and explore). Applied after the current call returns.
	Reconfigure(t *Trial, config map[string]any, cp Checkpoint)
	// Stop ends a trial that is paused or pending.
	Stop(t *Trial)
}

// Scheduler decides which trials run, pause or stop early.
type Scheduler interface {
	// SetMetric tells the scheduler what to optimise; it returns an error
	// when the scheduler needs a metric and none is given.
	SetMetric(metric string, mode Mode) error
	// OnTrialAdd is called when a trial is created.
	OnTrialAdd(t *Trial)
	// OnTrialResult is called for every result of a running trial.
	OnTrialResult(ctl Controller, t *Trial, result map[string]any) Decision
	// OnTrialComplete is called once when a trial terminates or errors.
	OnTrialComplete(ctl Controller, t *Trial, result map[string]any)
	// ChooseTrialToRun picks one of the waiting (pending or paused, not
	// busy) trials that fit the free resources, in creation order, or nil.
	ChooseTrialToRun(waiting []*Trial) *Trial
}

// Flusher is implemented by schedulers that hold trials back waiting for
// more (HyperBand waits for a full bracket). The runner calls Flush when no
// trial runs and the searcher offers no new one; it returns whether the
// scheduler released something.
type Flusher interface {
	Flush(ctl Controller) bool
}

// FIFO runs trials in creation order to completion.
type FIFO struct{}

// SetMetric implements Scheduler.
func (FIFO) SetMetric(string, Mode) error { return nil }

// OnTrialAdd implements Scheduler.
func (FIFO) OnTrialAdd(*Trial) {}

// OnTrialResult implements Scheduler.
func (FIFO) OnTrialResult(Controller, *Trial, map[string]any) Decision { return Continue }

// OnTrialComplete implements Scheduler.
func (FIFO) OnTrialComplete(Controller, *Trial, map[string]any) {}

// ChooseTrialToRun implements Scheduler: pending trials first, then paused.
func (FIFO) ChooseTrialToRun(waiting []*Trial) *Trial {
	for _, t := range waiting {
		if t.Status == Pending {
			return t
		}
	}
	if len(waiting) > 0 {
		return waiting[0]
	}
	return nil
}

// metricBase holds the metric shared by the early-stopping schedulers.
type metricBase struct {
	metric   string
	mode     Mode
	timeAttr string
}

func (b *metricBase) SetMetric(metric string, mode Mode) error {
	if metric == "" {
		return fmt.Errorf("tune: this scheduler needs a metric to compare trials; set metric (and mode: max or min)")
	}
	if mode == "" {
		mode = Max
	}
	if !mode.valid() {
		return fmt.Errorf("tune: mode must be %q or %q, got %q", Max, Min, mode)
	}
	b.metric, b.mode = metric, mode
	if b.timeAttr == "" {
		b.timeAttr = "training_iteration"
	}
	return nil
}

// read returns the trial's time and score (higher is better) in result.
func (b *metricBase) read(result map[string]any) (t, score float64, ok bool) {
	t, ok1 := ResultFloat(result, b.timeAttr)
	v, ok2 := ResultFloat(result, b.metric)
	return t, b.mode.score(v), ok1 && ok2
}

// MedianStoppingConfig configures MedianStopping.
type MedianStoppingConfig struct {
	// TimeAttr is the result key measuring progress (default
	// training_iteration).
	TimeAttr string `json:"time_attr" yaml:"time_attr"`
	// GracePeriod: no trial is stopped before this time (default 1).
	GracePeriod float64 `json:"grace_period" yaml:"grace_period"`
	// MinSamplesRequired other trials must have reached a time before a
	// trial is compared with them (default 3).
	MinSamplesRequired int `json:"min_samples_required" yaml:"min_samples_required"`
}

// MedianStopping stops a trial whose best result so far is worse than the
// median of the other trials' running averages at the same time.
type MedianStopping struct {
	metricBase
	cfg MedianStoppingConfig
	// curves holds, per trial, the running average of its metric at each
	// reported time, ascending in time.
	curves map[string]*medianCurve
}

type medianCurve struct {
	times, avgs []float64
	sum, best   float64
	n           int
}

// NewMedianStopping validates cfg.
func NewMedianStopping(cfg MedianStoppingConfig) (*MedianStopping, error) {
	if cfg.GracePeriod == 0 {
		cfg.GracePeriod = 1
	}
	if cfg.MinSamplesRequired == 0 {
		cfg.MinSamplesRequired = 3
	}
	if cfg.GracePeriod < 0 {
		return nil, fmt.Errorf("tune: median stopping grace_period must be >= 0, got %g", cfg.GracePeriod)
	}
	if cfg.MinSamplesRequired < 1 {
		return nil, fmt.Errorf("tune: median stopping min_samples_required must be >= 1, got %d", cfg.MinSamplesRequired)
	}
	return &MedianStopping{metricBase: metricBase{timeAttr: cfg.TimeAttr}, cfg: cfg, curves: map[string]*medianCurve{}}, nil
}

// OnTrialAdd implements Scheduler.
func (m *MedianStopping) OnTrialAdd(t *Trial) {}

// OnTrialResult implements Scheduler.
func (m *MedianStopping) OnTrialResult(_ Controller, t *Trial, result map[string]any) Decision {
	now, score, ok := m.read(result)
	if !ok {
		return Continue
	}
	c := m.curves[t.ID]
	if c == nil {
		c = &medianCurve{best: score}
		m.curves[t.ID] = c
	}
	if k := len(c.times); k > 0 && now <= c.times[k-1] {
		// The trial restarted from an older checkpoint: drop the times it
		// will report again.
		i := sort.SearchFloat64s(c.times, now)
		c.times, c.avgs = c.times[:i], c.avgs[:i]
		c.n, c.sum = i, 0
		if i > 0 {
			c.sum = c.avgs[i-1] * float64(i)
		}
	}
	c.n++
	c.sum += score
	if score > c.best {
		c.best = score
	}
	c.times = append(c.times, now)
	c.avgs = append(c.avgs, c.sum/float64(c.n))
	if now < m.cfg.GracePeriod {
		return Continue
	}
	var others []float64
	for id, oc := range m.curves {
		if id == t.ID || len(oc.times) == 0 || oc.times[len(oc.times)-1] < now {
			continue
		}
		// Running average of the other trial at the latest time <= now.
		i := sort.SearchFloat64s(oc.times, now)
		if i == len(oc.times) || oc.times[i] > now {
			i--
		}
		if i >= 0 {
			others = append(others, oc.avgs[i])
		}
	}
	if len(others) < m.cfg.MinSamplesRequired {
		return Continue
	}
	if c.best < median(others) {
		return Stop
	}
	return Continue
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// OnTrialComplete implements Scheduler.
func (m *MedianStopping) OnTrialComplete(Controller, *Trial, map[string]any) {}

// ChooseTrialToRun implements Scheduler.
func (m *MedianStopping) ChooseTrialToRun(w []*Trial) *Trial { return FIFO{}.ChooseTrialToRun(w) }
