package main

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/datasets/fashionmnist"
	"github.com/gray-ml/gray/datasets/fashionmnist/fmtest"
	"github.com/gray-ml/gray/internal/graytest"
)

func TestMain(m *testing.M) {
	graytest.Main(m, gray.Options{NumCPUs: 2, NoGPUs: true})
}

// TestShortRun fits a few hundred images with and without actors: the
// loss falls, test accuracy is far above chance (0.1), and the sharded
// evaluation finds the same optimum as the serial one.
func TestShortRun(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("training test: skipped under -race and -short; make test's non-race pass runs it")
	}
	dir := fmtest.Dir(t, 400, 300)
	ctx := context.Background()
	var results []Result
	for _, actors := range []int{0, 2} {
		res, err := Run(ctx, Config{Dir: dir, Actors: actors, Iters: 15, TrainLimit: 300, TestLimit: 300, L2: 1e-3})
		if err != nil {
			t.Fatalf("actors=%d: %v", actors, err)
		}
		l := res.Losses
		if len(l) < 10 || !(l[len(l)-1] < 0.7*l[0]) {
			t.Fatalf("actors=%d: losses %v do not fall", actors, l)
		}
		if res.TestAcc < 0.5 || res.TrainAcc < 0.7 {
			t.Fatalf("actors=%d: train accuracy %.3f, test accuracy %.3f", actors, res.TrainAcc, res.TestAcc)
		}
		results = append(results, res)
	}
	a, b := results[0].Losses, results[1].Losses
	if d := math.Abs(a[len(a)-1] - b[len(b)-1]); d > 1e-6 {
		t.Fatalf("serial final loss %v, sharded %v", a[len(a)-1], b[len(b)-1])
	}
}

func TestMissingDataset(t *testing.T) {
	_, err := Run(context.Background(), Config{Dir: t.TempDir(), Iters: 1})
	if err == nil {
		t.Fatal("no error for an empty data directory")
	}
	if want := fashionmnist.Package; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name %s", err, want)
	}
}

// The driver's evaluation split over threads gives the loss and gradient
// of one thread (up to the order the parts' sums are added in), the same
// bits for the same thread count, and --threads below 1 is refused.
func TestThreads(t *testing.T) {
	dir := fmtest.Dir(t, 1500, 10)
	set, err := loadTrain(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float64, set.Features()*classes+classes)
	for i := range theta {
		theta[i] = 1e-3 * float64(i%17-8)
	}
	eval := func(threads int) Eval {
		o, err := newObjective(set, threads)
		if err != nil {
			t.Fatal(err)
		}
		defer o.close()
		e, err := o.eval(theta)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	one, three, again := eval(1), eval(3), eval(3)
	if one.Correct != three.Correct || math.Abs(one.Loss-three.Loss) > 1e-9*math.Abs(one.Loss) {
		t.Fatalf("1 thread: loss %v, %d correct; 3 threads: loss %v, %d correct", one.Loss, one.Correct, three.Loss, three.Correct)
	}
	for i := range one.Grad {
		if math.Abs(one.Grad[i]-three.Grad[i]) > 1e-9*(1+math.Abs(one.Grad[i])) {
			t.Fatalf("gradient %d: %v on 1 thread, %v on 3", i, one.Grad[i], three.Grad[i])
		}
		if three.Grad[i] != again.Grad[i] {
			t.Fatalf("gradient %d differs between two evaluations on 3 threads", i)
		}
	}
	if _, err := Run(context.Background(), Config{Dir: dir, Threads: -1, Iters: 1}); err == nil || !strings.Contains(err.Error(), "--threads must be at least 1") {
		t.Errorf("threads -1: got %v", err)
	}
}
