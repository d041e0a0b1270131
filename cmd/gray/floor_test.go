package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/gray-ml/gray"
)

// TestMain lets this test binary be a floor's child and a gray worker, as
// the gray executable is.
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

func TestRatios(t *testing.T) {
	rows := []row{
		{Name: rowTasksSync, Rate: 10_000},
		{Name: rowActorSync, Rate: 20_000},
		{Name: rowPingPong, Rate: 30_000},
		{Name: rowActorCreate, Rate: 100},
		{Name: rowProcStart, Rate: 400},
	}
	want := map[string]float64{
		rowTasksSync + " / physical limit":   3,
		rowActorSync + " / physical limit":   1.5,
		rowActorCreate + " / process starts": 0.25,
	}
	got := ratios(rows)
	if len(got) != len(want) {
		t.Fatalf("%d ratio rows, want %d: %+v", len(got), len(want), got)
	}
	for _, r := range got {
		if w, ok := want[r.Name]; !ok || r.Rate != w {
			t.Errorf("%s = %g, want %g", r.Name, r.Rate, w)
		}
	}
	// A filtered run without the floor has no ratios.
	if got := ratios(rows[:2]); len(got) != 0 {
		t.Errorf("ratios without the floor rows: %+v", got)
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
