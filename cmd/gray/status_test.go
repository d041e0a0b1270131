package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gray-ml/gray/runtime/task"
)

// gray status shows each node's GPUs in a column of its own: a GPU host
// whose GPUs were not found reads "none" at a glance.
func TestStatusShowsGPUsPerNode(t *testing.T) {
	st := &clusterStatus{Address: "10.0.0.1:6379", Alive: 3, Nodes: []nodeStatus{
		{ID: "gpuhost", Head: true, Alive: true, Resources: task.Resources{CPU: 16, GPU: 2}, Used: task.Resources{GPU: 1}},
		{ID: "leased", Alive: true, Resources: task.Resources{CPU: 4, GPU: 1}, Leased: task.Resources{GPU: 1}},
		{ID: "cpuonly", Alive: true, Resources: task.Resources{CPU: 2}},
	}}
	var b bytes.Buffer
	printStatus(&b, st)
	want := map[string]string{"gpuhost (head)": "1/2 used", "leased": "0/1 used, 1 leased", "cpuonly": "none"}
	var header []string
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "NODE") {
			header = strings.Fields(line)
			if len(header) < 4 || header[3] != "GPUS" {
				t.Fatalf("header %q: want a GPUS column after STATE", line)
			}
			continue
		}
		for id, gpus := range want {
			if strings.HasPrefix(line, id+" ") {
				if !strings.Contains(line, " "+gpus+" ") {
					t.Errorf("node %s: %q, want GPUs %q", id, line, gpus)
				}
				delete(want, id)
			}
		}
	}
	if header == nil || len(want) > 0 {
		t.Fatalf("nodes missing from the table (%v):\n%s", want, b.String())
	}
}
