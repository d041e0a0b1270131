package tune

import (
	"fmt"
	"strings"
)

// Status is a trial's lifecycle state.
type Status string

// Trial states: PENDING -> RUNNING -> (PAUSED <-> RUNNING) -> TERMINATED or
// ERROR.
const (
	Pending    Status = "PENDING"
	Running    Status = "RUNNING"
	Paused     Status = "PAUSED"
	Terminated Status = "TERMINATED"
	Errored    Status = "ERROR"
)

func (s Status) terminal() bool { return s == Terminated || s == Errored }

// Resources are what one trial holds while it runs, or what a node offers.
type Resources struct {
	// CPU and GPU are what the trial holds in all.
	CPU float64 `json:"cpu" yaml:"cpu"`
	GPU float64 `json:"gpu" yaml:"gpu"`
	// ExtraCPU is the part of CPU held by the actors the trainable starts
	// (an agent's num_workers rollout workers), which reserve their own
	// when they are created: a trial placed in a gray actor (Placement)
	// reserves CPU - ExtraCPU for it, and its GPUs. Zero for a node.
	ExtraCPU float64 `json:"extra_cpu,omitempty" yaml:"extra_cpu"`
}

// check reports negative amounts, and ExtraCPU above CPU.
func (r Resources) check() error {
	if r.CPU < 0 || r.GPU < 0 || r.ExtraCPU < 0 {
		return fmt.Errorf("amounts must not be negative, got %v", r)
	}
	if r.ExtraCPU > r.CPU {
		return fmt.Errorf("extra_cpu (%g), the CPUs of the trial's worker actors, is part of cpu (%g), so it cannot be larger", r.ExtraCPU, r.CPU)
	}
	return nil
}

func (r Resources) fits(used, total Resources) bool {
	const eps = 1e-9
	return used.CPU+r.CPU <= total.CPU+eps && used.GPU+r.GPU <= total.GPU+eps
}

// String shows the amounts in all (ExtraCPU is part of CPU).
func (r Resources) String() string {
	if r.GPU == 0 {
		return fmt.Sprintf("%gCPU", r.CPU)
	}
	return fmt.Sprintf("%gCPU %gGPU", r.CPU, r.GPU)
}

// Checkpoint is a saved trial state.
type Checkpoint struct {
	Path      string  `json:"path"`
	Iteration int     `json:"iteration"`
	TimeTotal float64 `json:"time_total_s"`
	// Score is the checkpoint_score_attr value when it was taken.
	Score float64 `json:"score"`
}

// Trial is one configuration being trained. Schedulers and searchers read
// it; only the runner changes it.
type Trial struct {
	ID        string
	Config    map[string]any
	Dir       string
	Status    Status
	Resources Resources
	// LastResult is the latest reported result (runner keys included).
	LastResult map[string]any
	Iteration  int
	TimeTotal  float64
	Failures   int
	// Checkpoints are the ones kept on disk, oldest first.
	Checkpoints []Checkpoint
	Error       string

	// Runner-private state.
	trainable   Trainable
	logger      Logger
	busy        bool   // an operation is in flight
	restoreFrom string // checkpoint to restore when next started
	wantStop    bool   // a scheduler asked to stop it while busy
	wantPause   bool
	reconfig    bool
	seq         int // creation order
}

// LatestCheckpoint returns the newest kept checkpoint, or false.
func (t *Trial) LatestCheckpoint() (Checkpoint, bool) {
	if len(t.Checkpoints) == 0 {
		return Checkpoint{}, false
	}
	return t.Checkpoints[len(t.Checkpoints)-1], true
}

// Metric returns a numeric value of the latest result by key. Nested keys
// are written with "/", e.g. "learner/kl".
func (t *Trial) Metric(key string) (float64, bool) { return ResultFloat(t.LastResult, key) }

// ResultFloat reads a number from a result; nested maps are reached with
// "/" in key (e.g. "learner/kl").
func ResultFloat(r map[string]any, key string) (float64, bool) {
	if r == nil {
		return 0, false
	}
	if v, ok := r[key]; ok {
		return toFloat(v)
	}
	if !strings.Contains(key, "/") {
		return 0, false
	}
	var cur any = r
	for _, p := range strings.Split(key, "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			if fm, ok := cur.(map[string]float64); ok {
				v, ok := fm[p]
				return v, ok
			}
			return 0, false
		}
		if cur, ok = m[p]; !ok {
			return 0, false
		}
	}
	return toFloat(cur)
}
