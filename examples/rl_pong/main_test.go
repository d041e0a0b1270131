package main

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/envs"
)

func TestMain(m *testing.M) {
	gray.ServeIfWorker()
	os.Exit(m.Run())
}

func TestDiscountRewardsRestartsAtPoints(t *testing.T) {
	got := discountRewards([]float64{0, 0, 1, 0, -1})
	want := []float64{0.99 * 0.99, 0.99, 1, -0.99, -1}
	for i := range want {
		if d := got[i] - want[i]; d > 1e-12 || d < -1e-12 {
			t.Fatalf("discountRewards = %v, want %v", got, want)
		}
	}
}

// Ray 0.2's example's preprocessing keeps the paddles and the ball of the
// playing field as ones and erases the background.
func TestPrepro(t *testing.T) {
	e, err := envs.NewPixelPong(nil)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := e.Reset(1)
	if err != nil {
		t.Fatal(err)
	}
	img := make([]float64, inputDim)
	prepro(obs, img)
	s := e.State()
	// The agent's paddle: columns 140–143 are 70–71 at half resolution,
	// rows from its top (minus the 35 cropped) halved.
	y := (int(s.AgentY) - 35 + 1) / 2
	if img[(y+2)*80+70] != 1 {
		t.Errorf("agent paddle not set at (%d, 70)", y+2)
	}
	if img[40*80+40] != 0 {
		t.Error("background not erased")
	}
	n := 0
	for _, v := range img {
		n += int(v)
	}
	// Two paddles of 16 rows × 4 columns at half resolution: 2 × 8 × 2.
	if n != 32 {
		t.Errorf("%d pixels set, want the two paddles' 32", n)
	}
}

// The short mode runs a few batches of remote rollouts, prints Ray 0.2's
// lines and changes the weights.
func TestShortRun(t *testing.T) {
	if err := gray.Init(context.Background(), gray.Options{NumCPUs: 2, NoGPUs: true}); err != nil {
		t.Fatal(err)
	}
	defer gray.Shutdown()
	var out bytes.Buffer
	o := Options{BatchSize: 2, Batches: 2, LearningRate: 1e-3, MaxSteps: 100, Seed: 3, Hidden: 8}
	m, err := train(context.Background(), o, &out)
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"episode reward total was", "running mean:", "Batch 1 computed 2 rollouts", "Batch 2 computed 2 rollouts"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Count(text, "episode reward total was") != 4 {
		t.Errorf("want 4 episode lines:\n%s", text)
	}
	if slices.Equal(m.W2, newModel(3, 8).W2) {
		t.Error("training left the weights unchanged")
	}
}

func TestOptionErrors(t *testing.T) {
	for _, o := range []Options{{BatchSize: 0, LearningRate: 1, Hidden: 1}, {BatchSize: 1, Batches: -1, LearningRate: 1, Hidden: 1},
		{BatchSize: 1, LearningRate: 0, Hidden: 1}, {BatchSize: 1, LearningRate: 1}} {
		if o.check() == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}
