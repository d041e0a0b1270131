package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/datasets/fashionmnist"
	"github.com/gray-ml/gray/datasets/fashionmnist/fmtest"
)

func TestMain(m *testing.M) {
	gray.ServeIfWorker()
	if err := gray.Init(context.Background(), gray.Options{NumCPUs: 2, NoGPUs: true}); err != nil {
		fmt.Fprintln(os.Stderr, "gray.Init:", err)
		os.Exit(1)
	}
	code := m.Run()
	gray.Shutdown()
	os.Exit(code)
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
