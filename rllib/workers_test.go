package rllib

import (
	"context"
	"strings"
	"testing"

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
