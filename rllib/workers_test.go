package rllib

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gray-ml/gray"
)

func TestCheckWorkers(t *testing.T) {
	err := CheckWorkers("TEST", 2, "to sample in this process")
	want := "TEST: num_workers 2 needs the gray runtime: call gray.Init first (the train command does), or set num_workers to 0 to sample in this process"
	if err == nil || err.Error() != want {
		t.Errorf("before gray.Init:\n got %v\nwant %s", err, want)
	}
	if err := gray.Init(context.Background(), gray.Options{NumCPUs: 3}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gray.Shutdown() })
	for _, n := range []int{0, 1, 3} {
		if err := CheckWorkers("TEST", n, ""); err != nil {
			t.Errorf("num_workers=%d on 3 CPUs: %v", n, err)
		}
	}
	err = CheckWorkers("TEST", 5, "to sample in this process")
	want = "TEST: num_workers=5 needs 5 CPUs (each worker actor reserves one); the runtime has 3: set num_workers to at most 3 or give the runtime more CPUs (--num-cpus), or set num_workers to 0 to sample in this process"
	if err == nil || err.Error() != want {
		t.Errorf("num_workers=5 on 3 CPUs:\n got %v\nwant %s", err, want)
	}
	if err := CheckWorkers("TEST", 4, ""); err == nil || strings.Contains(err.Error(), "set num_workers to 0") {
		t.Errorf("num_workers=4 on 3 CPUs without a zero option: %v", err)
	}
}

// idler is a worker actor that does nothing but answer.
type idler struct{ Stateless }

var (
	idlerActor = WorkerActor("rllib_test.idler", func(context.Context, int) (*idler, error) { return &idler{}, nil })
	idlerPing  = gray.Method0(idlerActor, "Ping", func(*idler, context.Context) (int, error) { return 1, nil })
)

// A worker that waits for a CPU the runtime does not have free is
// reported with what to change, once the others have started and it has
// made no progress for the stall time.
func TestAwaitStartedSaysWhatToChange(t *testing.T) {
	ctx := context.Background()
	if err := gray.Init(ctx, gray.Options{NumCPUs: 2}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gray.Shutdown() })
	wait := StartWait{First: time.Minute, Stall: time.Minute}
	var hs []gray.Handle[idler]
	var calls []gray.Ref[int]
	start := func() {
		h, err := idlerActor.Remote(ctx, len(hs))
		if err != nil {
			t.Fatal(err)
		}
		hs, calls = append(hs, h), append(calls, idlerPing.Remote(h))
	}
	start()
	start()
	if err := AwaitStarted(ctx, "TEST", "worker", calls, wait, ""); err != nil {
		t.Fatalf("two workers on two CPUs: %v", err)
	}
	// Both CPUs are held: a third worker cannot start.
	start()
	defer func() { _ = KillWorkers(hs) }()
	wait.Stall = 100 * time.Millisecond
	err := AwaitStarted(ctx, "TEST", "worker", calls, wait, "to sample in this process")
	for _, want := range []string{"TEST: only 2 of num_workers=3 workers started", "set num_workers to at most 2", "--num-cpus", "or set num_workers to 0 to sample in this process"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a third worker on two CPUs: %v, want an error containing %q", err, want)
		}
	}
}
