package tune

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Trials of agents with worker actors hold 1 CPU plus one per worker
// (AgentResources), so the CPUs in use (trial plus its workers) never
// exceed the node's, whatever mix of num_workers the search samples.
func TestAgentTrialsHoldTheirWorkersCPUs(t *testing.T) {
	var mu sync.Mutex
	inUse, peak := 0, 0
	// A fake agent: it "starts" num_workers workers, holding 1+num_workers
	// CPUs while it runs.
	fake := FuncTrainable(func(ctx context.Context, cfg map[string]any, report ReportFunc) error {
		w, _ := Int(cfg, "num_workers")
		mu.Lock()
		inUse += 1 + w
		if inUse > peak {
			peak = inUse
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			inUse -= 1 + w
			mu.Unlock()
		}()
		for i := 0; ; i++ {
			time.Sleep(time.Millisecond)
			if err := report(map[string]any{"score": float64(i)}); err != nil {
				return nil
			}
		}
	})
	a, err := Run(context.Background(), Experiment{
		Dir: filepath.Join(t.TempDir(), "exp"), Trainable: fake,
		Space:          map[string]any{"num_workers": Grid(0, 3, 1, 2, 3, 0), "lr": Uniform{0, 1}},
		NumSamples:     2,
		Stop:           map[string]float64{"training_iteration": 5},
		TrialResources: AgentResources, NodeResources: Resources{CPU: 4},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Trials) != 12 {
		t.Fatalf("%d trials, want 12", len(a.Trials))
	}
	for _, tr := range a.Trials {
		w, _ := Int(tr.Config, "num_workers")
		if tr.Resources.CPU != float64(1+w) {
			t.Errorf("trial %s with num_workers %d holds %v CPUs, want %d", tr.ID, w, tr.Resources.CPU, 1+w)
		}
		if tr.Status != Terminated {
			t.Errorf("trial %s %s", tr.ID, tr.Status)
		}
	}
	if peak > 4 || peak < 2 {
		t.Errorf("%d CPUs in use at the peak on a 4-CPU node", peak)
	}

	// A trial whose workers cannot fit on the node is a clear error.
	_, err = Run(context.Background(), Experiment{
		Dir: filepath.Join(t.TempDir(), "exp"), Trainable: fake,
		Space: map[string]any{"num_workers": 4}, Stop: map[string]float64{"training_iteration": 2},
		TrialResources: AgentResources, NodeResources: Resources{CPU: 4},
	})
	if err == nil || !strings.Contains(err.Error(), "lower num_workers or num_learner_threads, or set resources_per_trial") {
		t.Fatalf("num_workers 4 on a 4-CPU node: %v", err)
	}

	// So is one whose learner threads cannot fit: the error names the key.
	_, err = Run(context.Background(), Experiment{
		Dir: filepath.Join(t.TempDir(), "exp"), Trainable: fake,
		Space: map[string]any{"num_learner_threads": 99}, Stop: map[string]float64{"training_iteration": 2},
		TrialResources: AgentResources, NodeResources: Resources{CPU: 4},
	})
	if err == nil || !strings.Contains(err.Error(), "needs 99CPU but the node has 4CPU; lower num_workers or num_learner_threads") {
		t.Fatalf("num_learner_threads 99 on a 4-CPU node: %v", err)
	}

	// resources_per_trial given: it wins over the derived default.
	if got := AgentResources(map[string]any{"num_workers": 2, "num_gpus": 1}); got != (Resources{CPU: 3, GPU: 1, ExtraCPU: 2}) {
		t.Errorf("AgentResources = %+v, want 3 CPUs (2 of them its workers') 1 GPU", got)
	}
	spec, err := SpecFromMap("x", map[string]any{"run": "PPO", "env": "CartPole-v1", "config": map[string]any{"num_workers": 2}})
	if err != nil {
		t.Fatal(err)
	}
	exp, err := spec.Build(BuildOptions{ResultsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if exp.TrialResources == nil {
		t.Error("an experiment file without resources_per_trial does not size trials by num_workers")
	}
}

// AgentResources reserves the learner's threads and one CPU per worker.
func TestAgentResourcesCountsLearnerThreads(t *testing.T) {
	for _, tc := range []struct {
		config map[string]any
		want   Resources
	}{
		{map[string]any{}, Resources{CPU: 1}},
		{map[string]any{"num_workers": 2}, Resources{CPU: 3, ExtraCPU: 2}},
		{map[string]any{"num_learner_threads": 4}, Resources{CPU: 4}},
		{map[string]any{"num_learner_threads": 4, "num_workers": 2, "num_gpus": 1}, Resources{CPU: 6, ExtraCPU: 2, GPU: 1}},
	} {
		if got := AgentResources(tc.config); got != tc.want {
			t.Errorf("AgentResources(%v) = %+v, want %+v", tc.config, got, tc.want)
		}
	}
}
