package sched

import (
	"slices"
	"strings"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// cpus returns a request for n CPUs.
func cpus(n float64) *task.Resources { return &task.Resources{CPU: n} }

// must fails t when c's invariants do not hold.
func must(t *testing.T, c *Core[int]) {
	t.Helper()
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
}

// kinds lists the kinds of effects, for comparing.
func kinds(es []Effect[int]) string {
	var b []string
	for _, e := range es {
		s := e.Kind.String()
		switch e.Kind {
		case Run:
			s += "(" + itoa(int(e.Worker)) + "," + itoa(e.Task) + ")"
		case Spawn, Exit, Recall, Resume:
			s += "(" + itoa(int(e.Worker)) + ")"
		case StartActor:
			s += "(" + itoa(int(e.Worker))
			if e.Reused {
				s += ",reused"
			}
			s += ")"
		case Orphan:
			s += "(" + itoa(int(e.Worker)) + "," + itoa(e.Task) + ")"
		case Refuse:
			s += "(" + itoa(e.Task) + ")"
		}
		b = append(b, s)
	}
	return strings.Join(b, " ")
}

func itoa(i int) string {
	if i < 0 {
		return "-" + itoa(-i)
	}
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// booted returns a core of total resources whose workers pool workers have
// connected, with their effects taken.
func booted(t *testing.T, total task.Resources, workers int) *Core[int] {
	t.Helper()
	c := New[int](Config{Total: total, Workers: workers})
	c.Boot()
	for _, e := range c.Effects() {
		if e.Kind != Spawn {
			t.Fatalf("boot: effect %v, want spawns", e.Kind)
		}
		c.WorkerReady(e.Worker)
	}
	if es := c.Effects(); len(es) != 0 {
		t.Fatalf("idle pool: effects %s", kinds(es))
	}
	must(t, c)
	return c
}

func TestTransitions(t *testing.T) {
	two := task.Resources{CPU: 2}
	tests := []struct {
		name string
		run  func(c *Core[int]) []Effect[int]
		want string
	}{
		{"a task runs on an idle worker", func(c *Core[int]) []Effect[int] {
			c.Submit(1, cpus(1), true)
			return c.Effects()
		}, "run(2,1)"},
		{"a third task waits behind a busy worker of its shape", func(c *Core[int]) []Effect[int] {
			for i := 1; i <= 4; i++ {
				c.Submit(i, cpus(1), true)
			}
			return c.Effects()
		}, "run(2,1) run(1,2) run(1,3)"},
		{"short tasks pack onto the busy worker up to their depth before an idle one is woken", func(c *Core[int]) []Effect[int] {
			for i := 1; i <= 4; i++ {
				c.SubmitPacked(i, cpus(1), 3)
			}
			return c.Effects()
		}, "run(2,1) run(2,2) run(2,3) run(1,4)"},
		{"packed tasks go to the fullest worker below their depth, so the others drain", func(c *Core[int]) []Effect[int] {
			for i := 1; i <= 4; i++ { // worker 2 full at 3: worker 1 is woken
				c.SubmitPacked(i, cpus(1), 3)
			}
			c.TaskDone(2, false) // worker 2 holds two, worker 1 one
			c.SubmitPacked(5, cpus(1), 3)
			return c.Effects()
		}, "run(2,1) run(2,2) run(2,3) run(1,4) run(2,5)"},
		{"packing skips a worker blocked in Get", func(c *Core[int]) []Effect[int] {
			c.SubmitPacked(1, cpus(1), 4)
			c.Block(2, c.Epoch(2))
			c.SubmitPacked(2, cpus(1), 4)
			return c.Effects()
		}, "run(2,1) run(1,2)"},
		{"a task that may not be pipelined waits in the queue", func(c *Core[int]) []Effect[int] {
			for i := 1; i <= 4; i++ {
				c.Submit(i, cpus(1), false)
			}
			return c.Effects()
		}, "run(2,1) run(1,2)"},
		{"fractional tasks grow the pool to what the resources allow", func(c *Core[int]) []Effect[int] {
			for i := 1; i <= 4; i++ {
				c.Submit(i, cpus(0.5), true)
			}
			return c.Effects()
		}, "run(2,1) run(1,2) spawn(3) spawn(4)"},
		{"tasks that take no CPU do not grow the pool past its size: they queue behind busy workers", func(c *Core[int]) []Effect[int] {
			for i := 1; i <= 4; i++ {
				c.Submit(i, cpus(0), true)
			}
			return c.Effects()
		}, "run(2,1) run(1,2) run(1,3)"},
		{"a finished task frees its worker for the next", func(c *Core[int]) []Effect[int] {
			c.Submit(1, cpus(2), true)
			c.Submit(2, cpus(2), false)
			c.Effects()
			c.TaskDone(2, false)
			return c.Effects()
		}, "run(2,2)"},
		{"a blocked worker lends its CPU to a child", func(c *Core[int]) []Effect[int] {
			c.Submit(1, cpus(2), true)
			c.Effects()
			c.Block(2, c.Epoch(2))
			c.Submit(2, cpus(1), true)
			return c.Effects()
		}, "run(1,2)"},
		{"an unblocked worker waits for its CPUs back", func(c *Core[int]) []Effect[int] {
			c.Submit(1, cpus(2), true)
			c.Effects()
			c.Block(2, c.Epoch(2))
			c.Submit(2, cpus(1), true)
			c.Effects()
			if c.Unblock(2, c.Epoch(2)) {
				panic("resumed while its CPUs are in use")
			}
			c.TaskDone(1, false)
			return c.Effects()
		}, "resume(2)"},
		{"blocking with tasks queued behind recalls them", func(c *Core[int]) []Effect[int] {
			for i := 1; i <= 4; i++ {
				c.Submit(i, cpus(1), true)
			}
			c.Effects() // 3 waits behind 2 on worker 1
			c.Block(1, c.Epoch(1))
			es := c.Effects()
			c.GiveBack(1, func(int) bool { return true })
			return append(es, c.Effects()...)
		}, "recall(1) spawn(3)"},
		{"a withdrawn pipelined task leaves the core; the next runs after the running one", func(c *Core[int]) []Effect[int] {
			for i := 1; i <= 4; i++ {
				c.Submit(i, cpus(1), true)
			}
			c.Effects() // 3 waits behind 2 on worker 1
			c.Withdraw(1, func(t int) bool { return t == 3 })
			if got := c.Sent(1); !slices.Equal(got, []int{2}) {
				panic("worker 1 still holds the withdrawn task")
			}
			c.TaskDone(1, false)
			return c.Effects()
		}, "run(1,4)"},
		{"a dead worker's queued tasks run elsewhere and it is replaced", func(c *Core[int]) []Effect[int] {
			for i := 1; i <= 4; i++ {
				c.Submit(i, cpus(1), true)
			}
			c.Effects() // 3 waits behind 2 on worker 1
			c.WorkerDied(1)
			c.WorkerReady(3)
			return c.Effects()
		}, "orphan(1,2) spawn(3) run(3,3)"},
		{"an actor starts once its resources are free", func(c *Core[int]) []Effect[int] {
			c.Submit(1, cpus(2), true)
			c.WaitActor(ids.ActorID{1}, task.Resources{CPU: 1})
			es := c.Effects()
			c.TaskDone(2, false)
			return append(es, c.Effects()...)
		}, "run(2,1) spawn(3) start-actor(2,reused)"},
		{"an idle spare is reaped", func(c *Core[int]) []Effect[int] {
			for i := 1; i <= 4; i++ {
				c.Submit(i, cpus(0.5), true)
			}
			for _, e := range c.Effects() {
				if e.Kind == Spawn {
					c.WorkerReady(e.Worker)
				}
			}
			c.Effects()
			for w := WorkerID(1); w <= 4; w++ {
				c.TaskDone(w, false)
			}
			return c.Effects()
		}, "exit(1) exit(2)"},
		{"workers that cannot start fail what waits", func(c *Core[int]) []Effect[int] {
			c.Submit(1, cpus(2), true)
			c.Submit(2, cpus(2), false)
			c.Effects()
			c.SpawnFailed()
			c.WorkerDied(1)
			return c.Effects()
		}, "refuse(2)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := booted(t, two, 2)
			got := kinds(tc.run(c))
			must(t, c)
			if got != tc.want {
				t.Fatalf("effects %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFeasible(t *testing.T) {
	c := New[int](Config{Total: task.Resources{CPU: 2, GPU: 1, Custom: map[string]float64{"disk": 1}}, Workers: 2})
	for _, tc := range []struct {
		r    task.Resources
		want string
	}{
		{task.Resources{CPU: 2, GPU: 1}, ""},
		{task.Resources{CPU: 3}, "CPU=3"},
		{task.Resources{GPU: 0.5}, "whole numbers"},
		{task.Resources{Custom: map[string]float64{"disk": 2}}, "disk=2"},
		{task.Resources{Custom: map[string]float64{"tpu": 1}}, "tpu=1"},
	} {
		err := c.Feasible("f", tc.r)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Feasible(%v) = %v, want %q", tc.r, err, tc.want)
		}
	}
}

// TestPackWorkersBound: with Config.PackWorkers set, packed tasks run on
// at most that many workers at once; the rest wait for room behind them
// rather than wake an idle worker, unless one of them blocks.
func TestPackWorkersBound(t *testing.T) {
	tests := []struct {
		name string
		run  func(c *Core[int]) []Effect[int]
		want string
	}{
		{"a burst deeper than one worker's depth waits for it, the other workers sleep", func(c *Core[int]) []Effect[int] {
			for i := 1; i <= 4; i++ {
				c.SubmitPacked(i, cpus(1), 2)
			}
			return c.Effects()
		}, "run(4,1) run(4,2)"},
		{"room behind the hot worker takes the next", func(c *Core[int]) []Effect[int] {
			for i := 1; i <= 4; i++ {
				c.SubmitPacked(i, cpus(1), 2)
			}
			c.TaskDone(4, false)
			return c.Effects()
		}, "run(4,1) run(4,2) run(4,3)"},
		{"a hot worker blocked in Get does not count: another is woken", func(c *Core[int]) []Effect[int] {
			for i := 1; i <= 3; i++ {
				c.SubmitPacked(i, cpus(1), 2)
			}
			c.Block(4, c.Epoch(4))
			return c.Effects()
		}, "run(4,1) run(4,2) recall(4) run(3,3)"},
		{"a worker running a task that is not packed does not count", func(c *Core[int]) []Effect[int] {
			c.Submit(1, cpus(1), false)
			c.SubmitPacked(2, cpus(1), 1) // wakes worker 3, now the hot one
			c.SubmitPacked(3, cpus(1), 1) // waits for it
			return c.Effects()
		}, "run(4,1) run(3,2)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New[int](Config{Total: task.Resources{CPU: 4}, Workers: 4, PackWorkers: 1})
			c.Boot()
			for _, e := range c.Effects() {
				c.WorkerReady(e.Worker)
			}
			c.Effects()
			if got := kinds(tc.run(c)); got != tc.want {
				t.Fatalf("effects %q, want %q", got, tc.want)
			}
			must(t, c)
		})
	}
}
