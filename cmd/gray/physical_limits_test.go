package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/gray-ml/gray"
)

// TestMain lets this test binary be a physical-limit measurement's child
// and a gray worker, as the gray executable is.
func TestMain(m *testing.M) {
	if floorChild() {
		os.Exit(0)
	}
	gray.ServeIfWorker()
	os.Exit(m.Run())
}

func TestPhysicalLimits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rate, err := pingPong(ctx, 20*time.Millisecond)
	if err != nil || rate <= 0 {
		t.Errorf("ping-pong: %g round trips/s, %v", rate, err)
	}
	n, err := processStarts(ctx, 10*time.Millisecond)
	if err != nil || n < 1 {
		t.Errorf("process starts: %g, %v", n, err)
	}
}

func TestRatiosAlternateTheirLoops(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A step that costs nothing is a small fraction of a round trip.
	r, err := latencyRatio(ctx, 40*time.Millisecond, func() error { return nil })
	if err != nil || r <= 0 || r >= 1 {
		t.Errorf("latency ratio of an empty step: %g, %v; want in (0, 1)", r, err)
	}
	// Work that counts 3 units per millisecond it takes, against a floor
	// that counts 1, is 3 times the floor's rate. Each counts by the time
	// it really took, so a loaded machine's late wake-ups change both
	// sides alike.
	pace := func(units float64) func(time.Duration) (float64, error) {
		return func(d time.Duration) (float64, error) {
			t0 := time.Now()
			time.Sleep(d)
			return units * float64(time.Since(t0)) / float64(time.Millisecond), nil
		}
	}
	r, err = rateRatio(100*time.Millisecond, pace(3), pace(1))
	if err != nil || r < 1.5 || r > 6 {
		t.Errorf("rate ratio: %g, %v; want about 3", r, err)
	}
}

func TestSelected(t *testing.T) {
	cases := []struct {
		name, filter string
		want         bool
	}{
		{rowTasksSync, "", true},
		{rowTasksSync, "tasks sync", true},
		{rowTasksSync, "physical", false},
		{rowPingPong, "tasks sync,physical", true},
		{rowActorCreate, ",creation,", true},
		{rowActorCreate, ",", false},
	}
	for _, c := range cases {
		if got := selected(c.name, c.filter); got != c.want {
			t.Errorf("selected(%q, %q) = %v, want %v", c.name, c.filter, got, c.want)
		}
	}
}
