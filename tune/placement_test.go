package tune

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gray-ml/gray"
)

// Where trials run: a Registered trainable runs in this process unless
// Placement asks for actors (gray runs on one machine here, so auto means
// in-process), a trainable worker processes cannot make is refused for
// actors, and an unknown placement is named.
func TestPlacement(t *testing.T) {
	if testing.Short() {
		t.Skip("starts gray worker processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := gray.Init(ctx, gray.Options{NumCPUs: 2, NoGPUs: true}); err != nil {
		t.Fatal(err)
	}
	defer gray.Shutdown()
	for _, c := range []struct {
		name      string
		placement Placement
		trainable TrainableFactory
		inActor   bool
		err       string
	}{
		{"auto on one machine", PlaceAuto, Registered("tune.test-curve", nil), false, ""},
		{"in-process", PlaceInProcess, Registered("tune.test-curve", nil), false, ""},
		{"actors", PlaceActors, Registered("tune.test-curve", nil), true, ""},
		{"remote trainable", PlaceAuto, RemoteTrainable("tune.test-curve", nil), true, ""},
		{"actors need a registered trainable", PlaceActors, FuncTrainable(curve), false, "use tune.Registered or tune.RemoteTrainable"},
		{"unknown placement", "cloud", Registered("tune.test-curve", nil), false, `Placement "cloud"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "exp")
			a, err := Run(ctx, Experiment{
				Dir: dir, Trainable: c.trainable, Placement: c.placement,
				Space: map[string]any{"quality": Grid(1.0, 2.0)}, Metric: "score",
				Stop: map[string]float64{"training_iteration": 2}, NodeResources: Resources{CPU: 2},
			})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one saying %q", err, c.err)
				}
				if _, err := os.Stat(dir); err == nil {
					t.Error("the experiment folder was made before the settings were checked")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, tr := range a.Trials {
				pid, _ := tr.Metric("pid")
				if tr.Status != Terminated || tr.Iteration != 2 {
					t.Errorf("trial %s %s at %d: %s", tr.ID, tr.Status, tr.Iteration, tr.Error)
				}
				if in := int(pid) != os.Getpid(); in != c.inActor {
					t.Errorf("trial %s ran in pid %v (this process is %d), want in an actor: %v", tr.ID, pid, os.Getpid(), c.inActor)
				}
			}
		})
	}
}

// A trial placed in an actor reserves its resources less the CPUs of the
// worker actors it starts; an extra_cpu above cpu is refused.
func TestTrialActorReserves(t *testing.T) {
	tr := placed(Registered("x", nil)(), true, Resources{CPU: 3, GPU: 1, ExtraCPU: 2})
	r, ok := tr.(*remoteTrainable)
	if !ok || r.res == nil || r.res.CPUs != 1 || r.res.GPUs != 1 {
		t.Fatalf("placed %T reserving %+v, want a remote trainable reserving 1 CPU 1 GPU", tr, r.res)
	}
	if _, ok := placed(Registered("x", nil)(), false, Resources{CPU: 1}).(*registered); !ok {
		t.Error("a registered trainable not placed in actors is not run in process")
	}
	err := Resources{CPU: 1, ExtraCPU: 2}.check()
	if err == nil || !strings.Contains(err.Error(), "extra_cpu") {
		t.Errorf("extra_cpu above cpu: %v", err)
	}
}
