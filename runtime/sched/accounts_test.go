package sched

import (
	"fmt"
	"testing"

	"github.com/gray-ml/gray/runtime/task"
)

// TestAccounts: each node of the job is counted by itself, the driver's
// own first, with what runs there, and a removed node is no longer
// counted.
func TestAccounts(t *testing.T) {
	cl := NewCluster[int](Config{Total: task.Resources{CPU: 1}, Workers: 1})
	cl.Step(Booted{})
	connectAll(t, cl)
	if err := cl.AddNode(1, task.Resources{CPU: 2}); err != nil {
		t.Fatal(err)
	}
	connectAll(t, cl)
	name := func(k NodeID) string { return fmt.Sprintf("n%d", k) }
	for i, step := range []struct {
		do   func()
		want []Account
	}{
		{func() {}, []Account{{Name: "n0", Total: task.Resources{CPU: 1}, Available: task.Resources{CPU: 1}}, {Name: "n1", Total: task.Resources{CPU: 2}, Available: task.Resources{CPU: 2}}}},
		{func() {
			cl.Step(Submitted[int]{Task: 1, Res: cpus(1), Pipelined: false})
			cl.Step(Submitted[int]{Task: 2, Res: cpus(2), Pipelined: false})
			connectAll(t, cl)
		},
			[]Account{{Name: "n0", Total: task.Resources{CPU: 1}, Available: task.Resources{}, Tasks: 1}, {Name: "n1", Total: task.Resources{CPU: 2}, Available: task.Resources{}, Tasks: 1}}},
		{func() { cl.Step(NodeRemoved{Node: 1}); cl.Effects() }, []Account{{Name: "n0", Total: task.Resources{CPU: 1}, Available: task.Resources{}, Tasks: 1}}},
	} {
		step.do()
		if got := cl.Accounts(name); fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", step.want) { // resources print without their empty maps
			t.Fatalf("step %d: accounts %+v, want %+v", i, got, step.want)
		}
		if err := cl.Check(); err != nil {
			t.Fatal(err)
		}
	}
}
