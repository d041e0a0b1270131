package pool

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

// Stacks returns the goroutine dump of local worker w: every goroutine's
// stack, as the worker's runtime.Stack writes them. It signals the
// worker's process (task.SignalStacks) rather than sending a message: a
// worker running a task reads its connection only when the task ends or
// waits, and a busy or stuck worker is the one whose stacks are wanted.
// The worker answers with task.MsgStacks (the handler passes it to
// GotStacks); Stacks waits for that, for ctx or for the worker's end. Not
// under the lock.
func (p *Pool) Stacks(ctx context.Context, w *Worker) (string, error) {
	p.mu.Lock()
	pr := w.process
	p.mu.Unlock()
	if !w.local || pr == nil {
		return "", fmt.Errorf("gray: worker %d runs on another node; take its stacks there (kill -USR1 its process sends them to its driver)", w.id)
	}
	ch := make(chan string, 1)
	p.stacks.mu.Lock()
	if p.stacks.m == nil {
		p.stacks.m = map[sched.WorkerID][]chan string{}
	}
	p.stacks.m[w.id] = append(p.stacks.m[w.id], ch)
	p.stacks.mu.Unlock()
	defer p.stacks.forget(w.id, ch)
	if err := pr.Signal(task.SignalStacks); err != nil {
		return "", fmt.Errorf("gray: asking worker %d for its stacks: %w", w.id, err)
	}
	select {
	case s := <-ch:
		return s, nil
	case <-w.exited:
		return "", fmt.Errorf("gray: worker %d exited before sending its stacks", w.id)
	case <-ctx.Done():
		return "", fmt.Errorf("gray: worker %d sent no stacks: %w", w.id, ctx.Err())
	}
}

// GotStacks hands w's dump (a MsgStacks payload) to everyone waiting for
// it: one dump answers every request made before it was taken.
func (p *Pool) GotStacks(w *Worker, payload []byte) {
	s := string(payload) // the payload's buffer is reused after the handler
	p.stacks.mu.Lock()
	chs := p.stacks.m[w.id]
	delete(p.stacks.m, w.id)
	p.stacks.mu.Unlock()
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
