package node

import (
	"slices"
	"sync"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// startLog is a Config.Starts that keeps what it was told.
type startLog struct {
	mu     sync.Mutex
	starts []taskStart
}

type taskStart struct {
	id   ids.TaskID
	node string
}

func (l *startLog) TaskStarted(id ids.TaskID, node string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.starts = append(l.starts, taskStart{id, node})
}

func (l *startLog) get() []taskStart {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.starts)
}

// TestTaskStartsNameWhereTasksRun: the node given a Config.Starts tells it
// of each task it sends, with the node that runs it ("" for the driver's
// own machine), before the worker has the task; `gray list` shows that.
func TestTaskStartsNameWhereTasksRun(t *testing.T) {
	for _, c := range []struct {
		name    string
		cluster bool   // the task runs on another node of a cluster
		want    string // the node named
	}{
		{"the driver's machine", false, ""},
		{"another node", true, "node 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := &startLog{}
			cfg := Config{Resources: task.Resources{CPU: 1}, NumWorkers: 1, Starts: log}
			var h *harness
			if c.cluster {
				h, _ = newClusterHarnessWith(t, Config{Starts: log})
				if err := h.n.AddNode(1, c.want, task.Resources{CPU: 1}); err != nil {
					t.Fatal(err)
				}
			} else {
				h = newHarnessWith(t, cfg)
			}
			s := h.submit(value("x"))
			fw := h.worker()
			if got := fw.exec(t); got.ID != s.ID {
				t.Fatalf("the worker got %s, want %s", got.ID, s.ID)
			}
			if got, want := log.get(), []taskStart{{s.ID, c.want}}; !slices.Equal(got, want) {
				t.Fatalf("starts told = %v; want %v", got, want)
			}
			fw.result(t, s, "ok")
			if o := h.get(s.Return(0)); string(o.Data) != "ok" {
				t.Fatalf("result = %q, %v", o.Data, o.Err)
			}
		})
	}
}
