package tune

import (
	"fmt"
	"math"
	"sort"
)

// HyperBandConfig configures HyperBand.
type HyperBandConfig struct {
	// TimeAttr measures progress (default training_iteration).
	TimeAttr string `json:"time_attr" yaml:"time_attr"`
	// MaxT is the most time any trial gets (default 81).
	MaxT float64 `json:"max_t" yaml:"max_t"`
	// ReductionFactor (eta): each halving keeps 1/eta of a bracket
	// (default 3).
	ReductionFactor float64 `json:"reduction_factor" yaml:"reduction_factor"`
}

// HyperBand (Li et al., 2017) groups trials into brackets. Bracket s holds
// up to ceil((sMax+1)/(s+1) * eta^s) trials that each run MaxT*eta^-s;
// then they pause, and once all live trials of the bracket have reached the
// milestone the best 1/eta continue for eta times longer and the rest stop
// (successive halving). Brackets cycle from s = sMax (many short trials) to
// s = 0 (few trials run to MaxT).
type HyperBand struct {
	metricBase
	cfg      HyperBandConfig
	sMax     int
	nextS    int
	cur      *hbBracket
	byTrial  map[string]*hbBracket
	brackets []*hbBracket
}

type hbBracket struct {
	s         int
	capacity  int
	milestone float64
	entries   []*hbEntry // creation order
	closed    bool       // no new trials (full, or halved once)
	halvings  int
}

type hbEntry struct {
	t       *Trial
	reached bool // reached the current milestone and waits for the others
	score   float64
	done    bool
}

// NewHyperBand validates cfg and fills defaults.
func NewHyperBand(cfg HyperBandConfig) (*HyperBand, error) {
	if cfg.MaxT == 0 {
		cfg.MaxT = 81
	}
	if cfg.ReductionFactor == 0 {
		cfg.ReductionFactor = 3
	}
	if cfg.MaxT < 1 {
		return nil, fmt.Errorf("tune: hyperband max_t must be >= 1, got %g", cfg.MaxT)
	}
	if cfg.ReductionFactor <= 1 {
		return nil, fmt.Errorf("tune: hyperband reduction_factor must be > 1, got %g", cfg.ReductionFactor)
	}
	h := &HyperBand{metricBase: metricBase{timeAttr: cfg.TimeAttr}, cfg: cfg, byTrial: map[string]*hbBracket{}}
	h.sMax = int(math.Log(cfg.MaxT)/math.Log(cfg.ReductionFactor) + 1e-9)
	h.nextS = h.sMax
	return h, nil
}

// BracketSizes returns (capacity, first milestone) for s = sMax..0.
func (h *HyperBand) BracketSizes() [][2]float64 {
	var out [][2]float64
	for s := h.sMax; s >= 0; s-- {
		n, r := h.bracketShape(s)
		out = append(out, [2]float64{float64(n), r})
	}
	return out
}

func (h *HyperBand) bracketShape(s int) (int, float64) {
	eta := h.cfg.ReductionFactor
	n := int(math.Ceil(float64(h.sMax+1) / float64(s+1) * math.Pow(eta, float64(s)) * (1 - 1e-12)))
	r := h.cfg.MaxT * math.Pow(eta, -float64(s))
	return n, r
}

// OnTrialAdd implements Scheduler.
func (h *HyperBand) OnTrialAdd(t *Trial) {
	if _, ok := h.byTrial[t.ID]; ok {
		return
	}
	if h.cur == nil || h.cur.closed || len(h.cur.entries) >= h.cur.capacity {
		if h.cur != nil {
			h.cur.closed = true
		}
		n, r := h.bracketShape(h.nextS)
		h.cur = &hbBracket{s: h.nextS, capacity: n, milestone: r}
		h.brackets = append(h.brackets, h.cur)
		if h.nextS--; h.nextS < 0 {
			h.nextS = h.sMax
		}
	}
	h.cur.entries = append(h.cur.entries, &hbEntry{t: t})
	h.byTrial[t.ID] = h.cur
}

func (b *hbBracket) entry(id string) *hbEntry {
	for _, e := range b.entries {
		if e.t.ID == id {
			return e
		}
	}
	return nil
}

// OnTrialResult implements Scheduler.
func (h *HyperBand) OnTrialResult(ctl Controller, t *Trial, result map[string]any) Decision {
	now, score, ok := h.read(result)
	if !ok {
		return Continue
	}
	b := h.byTrial[t.ID]
	if b == nil {
		return Continue
	}
	e := b.entry(t.ID)
	if now >= h.cfg.MaxT {
		e.done = true
		return Stop
	}
	if now < b.milestone || e.done {
		return Continue
	}
	e.reached, e.score = true, score
	if !b.allReached() {
		return Pause
	}
	if h.halve(ctl, b, e) {
		return Continue
	}
	return Stop
}

func (b *hbBracket) allReached() bool {
	if !b.closed && len(b.entries) < b.capacity {
		return false // more trials will join this round
	}
	live := 0
	for _, e := range b.entries {
		if e.done {
			continue
		}
		live++
		if !e.reached {
			return false
		}
	}
	return live > 0
}

// halve keeps the best 1/eta of the bracket's live trials, stops the rest
// and raises the milestone; it reports whether cur (may be nil) was kept.
func (h *HyperBand) halve(ctl Controller, b *hbBracket, cur *hbEntry) bool {
	b.closed = true
	b.halvings++
	var live []*hbEntry
	for _, e := range b.entries {
		if !e.done {
			live = append(live, e)
		}
	}
	sort.SliceStable(live, func(i, j int) bool { return live[i].score > live[j].score })
	keep := int(float64(len(live)) / h.cfg.ReductionFactor)
	if keep < 1 {
		keep = 1
	}
	b.milestone = math.Min(b.milestone*h.cfg.ReductionFactor, h.cfg.MaxT)
	kept := false
	for i, e := range live {
		e.reached = false
		if i < keep {
			if e == cur {
				kept = true
			}
			continue
		}
		e.done = true
		if e != cur {
			ctl.Stop(e.t)
		}
	}
	return kept
}

// OnTrialComplete implements Scheduler: a trial leaving may complete its
// bracket's halving round.
func (h *HyperBand) OnTrialComplete(ctl Controller, t *Trial, _ map[string]any) {
	b := h.byTrial[t.ID]
	if b == nil {
		return
	}
	e := b.entry(t.ID)
	if e.done {
		return
	}
	e.done = true
	if b.allReached() {
		h.halve(ctl, b, nil)
	}
}

// Flush implements Flusher: when nothing runs and no new trial comes, the
// open bracket is closed and halved with the trials it has.
func (h *HyperBand) Flush(ctl Controller) bool {
	progressed := false
	for _, b := range h.brackets {
		if b.closed {
			continue
		}
		b.closed = true
		if b.allReached() {
			h.halve(ctl, b, nil)
			progressed = true
		}
	}
	return progressed
}

// ChooseTrialToRun implements Scheduler: promoted paused trials first (to
// finish their brackets), then pending ones; trials waiting at a milestone
// are not run.
func (h *HyperBand) ChooseTrialToRun(waiting []*Trial) *Trial {
	for _, t := range waiting {
		if t.Status != Paused {
			continue
		}
		if b := h.byTrial[t.ID]; b != nil {
			if e := b.entry(t.ID); e != nil && !e.reached && !e.done {
				return t
			}
		}
	}
	for _, t := range waiting {
		if t.Status == Pending {
			return t
		}
	}
	return nil
}
