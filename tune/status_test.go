package tune

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gray-ml/gray/rllib"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestStatusTablePlainOutput(t *testing.T) {
	var out syncBuf
	slow := FuncTrainable(func(ctx context.Context, cfg map[string]any, report ReportFunc) error {
		return curve(ctx, cfg, func(r map[string]any) error {
			time.Sleep(5 * time.Millisecond)
			return report(r)
		})
	})
	_, err := Run(context.Background(), Experiment{
		Name: "status-demo", Dir: filepath.Join(t.TempDir(), "exp"), Trainable: slow,
		Space:  map[string]any{"quality": Grid(1.0, 2.0), "opt": map[string]any{"lr": LogUniform{1e-4, 1e-2}}},
		Metric: "score", Stop: map[string]float64{"training_iteration": 10},
		Reporter: NewTableReporter(&out), ReportInterval: 10 * time.Millisecond,
		NodeResources: Resources{CPU: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := out.String()
	// Not a terminal: progress lines, no cursor movement, then the table.
	if strings.Contains(s, "\x1b[") {
		t.Fatal("escape codes written to a non-terminal")
	}
	for _, want := range []string{"status-demo", "trials: 2 (2 TERMINATED)", "trial  status", "opt.lr", "quality", "score", "training_iteration"} {
		if !strings.Contains(s, want) {
			t.Errorf("status output lacks %q:\n%s", want, s)
		}
	}
	if !strings.Contains(s, "1 RUNNING") {
		t.Errorf("no progress line showed the running trial:\n%s", s)
	}
}

func TestStatusTableRedrawsOnTerminal(t *testing.T) {
	var out bytes.Buffer
	r := &TableReporter{w: &out, tty: true}
	snap := StatusSnapshot{Name: "x", Counts: map[Status]int{Running: 1}, Rows: []StatusRow{{ID: "00000", Status: Running, Resources: Resources{CPU: 1}}}}
	r.Report(snap)
	r.Report(snap)
	if !strings.Contains(out.String(), "\x1b[4A\x1b[J") {
		t.Fatalf("second report does not move up over the first table: %q", out.String())
	}
	if !strings.Contains(out.String(), "1CPU") {
		t.Fatal("resources in use not shown")
	}
}

// fakeAgent is a minimal rllib.Agent for the adapter test.
type fakeAgent struct {
	dir  string
	lr   float64
	iter int
}

func (a *fakeAgent) Train(context.Context) (rllib.Result, error) {
	a.iter++
	return rllib.Result{TrainingIteration: a.iter, EpisodeRewardMean: a.lr * float64(a.iter),
		Learner: map[string]float64{"kl": 0.01}}, nil
}
func (a *fakeAgent) Save(context.Context) (string, error) {
	p := filepath.Join(a.dir, fmt.Sprintf("agent_ckpt_%d.json", a.iter))
	b, _ := json.Marshal(a.iter)
	return p, os.WriteFile(p, b, 0o644)
}
func (a *fakeAgent) Restore(_ context.Context, p string) error {
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, &a.iter)
}
func (a *fakeAgent) ComputeAction([]float64) ([]float64, error) { return nil, nil }
func (a *fakeAgent) Iteration() int                             { return a.iter }
func (a *fakeAgent) LogDir() string                             { return a.dir }
func (a *fakeAgent) Stop() error                                { return nil }

func init() {
	rllib.Register(rllib.Algorithm{Name: "TuneFakeAlg", DefaultConfig: func() rllib.Config { return rllib.MapConfig{} },
		New: func(ctx context.Context, o rllib.Options, keys rllib.Config) (rllib.Agent, error) {
			var cfg struct {
				LR float64 `json:"lr"`
			}
			if err := rllib.Decode("TuneFakeAlg", keys.(rllib.MapConfig), &cfg); err != nil {
				return nil, err
			}
			if o.Env != "FakeEnv" {
				return nil, fmt.Errorf("unknown env %q", o.Env)
			}
			return &fakeAgent{dir: o.LogDir, lr: cfg.LR}, nil
		}})
}

func TestAgentTrainableThroughExperimentFile(t *testing.T) {
	src := `
agents:
  run: TuneFakeAlg
  env: FakeEnv
  metric: episode_reward_mean
  stop: {training_iteration: 6}
  checkpoint_freq: 2
  keep_checkpoints_num: 1
  checkpoint_at_end: true
  scheduler: {type: hyperband, max_t: 6, reduction_factor: 3}
  config:
    lr: {grid_search: [1, 2, 3]}
`
	specs, err := parseExperimentFile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	exp, err := specs[0].Build(BuildOptions{ResultsDir: t.TempDir(), NodeResources: Resources{CPU: 2}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Run(context.Background(), exp)
	if err != nil {
		t.Fatal(err)
	}
	best, err := BestTrial(exp.Dir, "episode_reward_mean", Max)
	if err != nil {
		t.Fatal(err)
	}
	if best.Config["lr"] != 3.0 || len(best.Checkpoints) == 0 {
		t.Fatalf("best %+v", best)
	}
	for _, tr := range a.Trials {
		// The agent's checkpoint files live inside the runner's checkpoint
		// folders, so pruning removes them too.
		if loose, _ := filepath.Glob(filepath.Join(tr.Dir, "agent_ckpt_*")); len(loose) != 0 {
			t.Fatalf("agent checkpoints left outside checkpoint folders: %v", loose)
		}
		if inside, _ := filepath.Glob(filepath.Join(tr.Dir, "checkpoint_*", "agent_ckpt_*")); len(inside) == 0 || len(inside) > 2 {
			t.Fatalf("agent checkpoints inside checkpoint folders: %v, want 1 or 2 (keep 1 + the final)", inside)
		}
		if kl, ok := tr.Metric("learner/kl"); !ok || kl != 0.01 {
			t.Fatalf("nested learner/kl not readable: %v", tr.LastResult)
		}
		// The agent resumed across HyperBand pauses: its own iteration count
		// matches the runner's.
		if r, _ := tr.Metric("episode_reward_mean"); r != tr.Config["lr"].(float64)*float64(tr.Iteration) {
			t.Fatalf("trial %s reward %v at iteration %d: agent not restored", tr.ID, r, tr.Iteration)
		}
	}
	// A bad agent config is reported as the trial's error.
	exp2 := exp
	exp2.Dir = filepath.Join(t.TempDir(), "bad")
	exp2.Space = map[string]any{"lrr": 1}
	exp2.Searcher = nil
	exp2.Scheduler = nil
	a, err = Run(context.Background(), exp2)
	if err != nil {
		t.Fatal(err)
	}
	if tr := a.Trials[0]; tr.Status != Errored || !strings.Contains(tr.Error, `unknown key "lrr"`) {
		t.Fatalf("bad config: %s %q", tr.Status, tr.Error)
	}
}
