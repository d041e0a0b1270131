package hyperopt

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gray-ml/gray/datasets/fashionmnist/fmtest"
)

// TestData returns a few hundred images: the installed dataset's, or a
// synthetic stand-in in the same format written into a temporary folder.
func testData(t *testing.T) Data {
	t.Helper()
	dir := fmtest.Dir(t, 700, 300)
	d, err := LoadData(dir, 500, 200, 300)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestTrainLearnsAndContinues trains in two segments: the loss falls,
// validation accuracy rises far above chance, and the second segment
// continues the first.
func TestTrainLearnsAndContinues(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("training test: skipped under -race and -short; make test's non-race pass runs it")
	}
	d := testData(t)
	hp := Hyperparameters{LearningRate: 3e-3, BatchSize: 32, Dropout: 0.2, Stddev: 0.1}
	o1, m1, err := Train(hp, Model{}, d.Train, d.Val, 40, 1)
	if err != nil {
		t.Fatal(err)
	}
	o2, m2, err := Train(hp, m1, d.Train, d.Val, 40, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("segment 1: loss %.3f → %.3f, val acc %.3f; segment 2: loss %.3f → %.3f, val acc %.3f",
		o1.FirstLoss, o1.LastLoss, o1.Accuracy, o2.FirstLoss, o2.LastLoss, o2.Accuracy)
	if m2.Steps != 80 || o2.Steps != 80 {
		t.Fatalf("steps %d/%d after two segments of 40", m2.Steps, o2.Steps)
	}
	if !(o2.LastLoss < 0.7*o1.FirstLoss) {
		t.Fatalf("loss did not fall: %.3f → %.3f", o1.FirstLoss, o2.LastLoss)
	}
	if o2.Accuracy < 0.5 {
		t.Fatalf("validation accuracy %.3f after 80 steps", o2.Accuracy)
	}
	acc, err := Accuracy(hp, m2, d.Test)
	if err != nil || acc < 0.45 {
		t.Fatalf("test accuracy %.3f, %v", acc, err)
	}
}

func TestTrainStopsWhenDiverging(t *testing.T) {
	d := testData(t)
	hp := Hyperparameters{LearningRate: 1e4, BatchSize: 8, Dropout: 0.1, Stddev: 1e3}
	o, m, err := Train(hp, Model{}, d.Train, d.Val, 50, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Diverged || !m.Diverged || o.Steps >= 50 || math.Abs(o.Accuracy-0.1) > 1e-9 {
		t.Fatalf("outcome %+v for a diverging run", o)
	}
	if _, _, err := Train(Hyperparameters{LearningRate: -1, BatchSize: 1, Stddev: 1}, Model{}, d.Train, d.Val, 1, 1); err == nil {
		t.Fatal("negative learning rate accepted")
	}
}

func TestSpaces(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for name, s := range Spaces {
		for i := 0; i < 200; i++ {
			hp := s.Generate(rng)
			if err := hp.Validate(); err != nil {
				t.Fatalf("%s drew %v: %v", name, hp, err)
			}
			if hp.BatchSize < s.BatchLo || hp.BatchSize >= s.BatchHi || math.Log10(hp.LearningRate) < s.LogLRLo || math.Log10(hp.LearningRate) >= s.LogLRHi {
				t.Fatalf("%s drew %v outside the space", name, hp)
			}
		}
	}
}

// A minibatch step split over threads gives the same model for the same
// thread count, one that learns as well, and threads below 1 are refused.
func TestTrainThreads(t *testing.T) {
	d := testData(t)
	hp := Hyperparameters{LearningRate: 3e-3, BatchSize: 32, Dropout: 0.2, Stddev: 0.1}
	const steps = 30
	o1, m1, err := TrainThreads(hp, Model{}, d.Train, d.Val, steps, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	_, m2, err := TrainThreads(hp, Model{}, d.Train, d.Val, steps, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m1.Weights, m2.Weights) {
		t.Error("two runs on 3 threads with seed 1 differ")
	}
	if o1.Steps != steps || !(o1.LastLoss < o1.FirstLoss) {
		t.Errorf("3 threads: %d steps, loss %.3f → %.3f; want %d steps and a falling loss", o1.Steps, o1.FirstLoss, o1.LastLoss, steps)
	}
	if _, _, err := TrainThreads(hp, Model{}, d.Train, d.Val, 1, 1, 0); err == nil {
		t.Error("0 threads accepted")
	}
}
