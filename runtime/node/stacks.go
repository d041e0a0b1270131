package node

import (
	"context"
	"fmt"
	"sync"

	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
)

// stackWaiters are the callers of Stacks waiting for workers' dumps.
type stackWaiters struct {
	mu sync.Mutex
	m  map[sched.WorkerID][]chan string
}

// Stacks returns the goroutine dump of worker id, a process of this
// machine: every goroutine's stack, as the worker's runtime.Stack writes
// them. It signals the worker (task.SignalStacks) and waits for its
// answer (task.MsgStacks), for ctx or the worker's end.
func (n *Node) Stacks(ctx context.Context, id int) (string, error) {
	n.mu.Lock()
	w := n.workers[sched.WorkerID(id)]
	var p *proc
	if w != nil && !w.dead {
		p = w
	}
	n.mu.Unlock()
	switch {
	case p == nil:
		return "", fmt.Errorf("gray: worker %d is not running in this session", id)
	case p.node != sched.Local || p.process == nil:
		return "", fmt.Errorf("gray: worker %d runs on another node; take its stacks there (kill -USR1 its process sends them to its driver)", id)
	}
	ch := make(chan string, 1)
	n.stacks.mu.Lock()
	if n.stacks.m == nil {
		n.stacks.m = map[sched.WorkerID][]chan string{}
	}
	n.stacks.m[p.id] = append(n.stacks.m[p.id], ch)
	n.stacks.mu.Unlock()
	defer n.stacks.forget(p.id, ch)
	if err := p.process.Signal(task.SignalStacks); err != nil {
		return "", fmt.Errorf("gray: asking worker %d for its stacks: %w", id, err)
	}
	select {
	case s := <-ch:
		return s, nil
	case <-p.exited:
		return "", fmt.Errorf("gray: worker %d exited before sending its stacks", id)
	case <-ctx.Done():
		return "", fmt.Errorf("gray: worker %d sent no stacks: %w", id, ctx.Err())
	}
}

// gotStacks hands a worker's dump to everyone waiting for it (one dump
// answers every request made before it was taken).
func (n *Node) gotStacks(w *proc, payload []byte) {
	s := string(payload) // the payload's buffer is reused after the handler
	n.stacks.mu.Lock()
	chs := n.stacks.m[w.id]
	delete(n.stacks.m, w.id)
	n.stacks.mu.Unlock()
	for _, ch := range chs {
		ch <- s
	}
}

func (sw *stackWaiters) forget(id sched.WorkerID, ch chan string) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	list := sw.m[id]
	for i, c := range list {
		if c == ch {
			sw.m[id] = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(sw.m[id]) == 0 {
		delete(sw.m, id)
	}
}

// LogDir is where workers write their output (worker-N.out and .err); ""
// when it goes to the driver's output instead.
func (n *Node) LogDir() string { return n.cfg.LogDir }
