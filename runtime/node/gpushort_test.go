package node

import (
	"strings"
	"testing"

	"github.com/gray-ml/gray/runtime/task"
)

const gpu2Func = "nodetest.gpu2"

func init() {
	task.Register(&task.Entry{Name: gpu2Func, Kind: task.KindFunc, NumReturns: 1, Res: task.Resources{CPU: 1, GPU: 2}})
}

// On a cluster, a task asking for more GPUs than any node has fails at
// submission with one line naming the fix, rather than waiting for a node
// that may never join; once a node with them has joined, it is accepted.
func TestClusterRefusesMoreGPUsThanAnyNode(t *testing.T) {
	h, _ := newClusterHarness(t)
	if err := h.n.AddNode(1, "node 1", task.Resources{CPU: 2, GPU: 1}); err != nil {
		t.Fatal(err)
	}
	s := task.NewSpec(0)
	s.ID, s.Kind, s.Func, s.NumReturns = h.n.NewTaskID(), task.KindFunc, gpu2Func, 1
	err := h.n.Submit(s)
	if err == nil || !strings.Contains(err.Error(), "GPU=2") || !strings.Contains(err.Error(), "--num-gpus") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("submitting a 2-GPU task to nodes of 1 GPU: %v; want one line naming GPU=2 and --num-gpus", err)
	}
	if o := h.get(s.Return(0)); o.Err == nil {
		t.Fatal("the refused task's result holds no error")
	}
	h.check("refused")
	if err := h.n.AddNode(2, "node 2", task.Resources{CPU: 1, GPU: 2}); err != nil {
		t.Fatal(err)
	}
	s2 := task.NewSpec(0)
	s2.ID, s2.Kind, s2.Func, s2.NumReturns = h.n.NewTaskID(), task.KindFunc, gpu2Func, 1
	if err := h.n.Submit(s2); err != nil {
		t.Fatalf("with a 2-GPU node in the cluster: %v", err)
	}
	fw := h.worker()
	got := fw.exec(t)
	if got.ID != s2.ID || len(got.GPUIDs()) != 2 {
		t.Fatalf("the 2-GPU node's worker got %s with GPUs %v, want %s with 2", got.ID, got.GPUIDs(), s2.ID)
	}
	fw.result(t, got, "ok")
	if o := h.get(s2.Return(0)); string(o.Data) != "ok" {
		t.Fatalf("result %q, %v", o.Data, o.Err)
	}
}
