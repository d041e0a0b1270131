package tune

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gray-ml/gray"
)

func init() {
	RegisterTrainable("tune.test-curve", func(args map[string]any) (Trainable, error) {
		return FuncTrainable(func(ctx context.Context, cfg map[string]any, report ReportFunc) error {
			return curve(ctx, cfg, func(r map[string]any) error {
				r["pid"] = os.Getpid()
				return report(r)
			})
		})(), nil
	})
}

func TestTrialsAsGrayActors(t *testing.T) {
	if testing.Short() {
		t.Skip("starts gray worker processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if err := gray.Init(ctx, gray.Options{NumCPUs: 2, NoGPUs: true}); err != nil {
		t.Fatal(err)
	}
	defer gray.Shutdown()
	hb, err := NewHyperBand(HyperBandConfig{MaxT: 4, ReductionFactor: 2})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Run(ctx, Experiment{
		Dir:       filepath.Join(t.TempDir(), "exp"),
		Trainable: RemoteTrainable("tune.test-curve", nil),
		Space:     map[string]any{"quality": Grid(1.0, 2.0, 3.0, 4.0)},
		Metric:    "score", Scheduler: hb, NodeResources: Resources{CPU: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	pids := map[float64]bool{}
	for _, tr := range a.Trials {
		if tr.Status != Terminated {
			t.Errorf("trial %s %s: %s", tr.ID, tr.Status, tr.Error)
		}
		pid, _ := tr.Metric("pid")
		if int(pid) == os.Getpid() || pid == 0 {
			t.Errorf("trial %s stepped in pid %v, not in an actor process", tr.ID, pid)
		}
		pids[pid] = true
		// Paused and resumed trials were restored from their checkpoint
		// inside a fresh actor.
		if s, _ := tr.Metric("step"); int(s) != tr.Iteration {
			t.Errorf("trial %s step %v at iteration %d", tr.ID, s, tr.Iteration)
		}
	}
	if len(pids) < 4 {
		t.Errorf("trials ran in %d distinct processes, want one actor per trial (at least 4)", len(pids))
	}
	best, _ := a.Best("score", Max)
	if best.Config["quality"] != 4.0 || best.Iteration != 4 {
		t.Errorf("best %v at %d", best.Config, best.Iteration)
	}
}
