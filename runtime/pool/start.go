package pool

import (
	"encoding/hex"
	"os"
	"strconv"

	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/workerproc"
)

// Start starts local worker w's process (runtime/workerproc) on a
// goroutine of the pool's, so the caller's lock is not held across the
// fork. An actor's worker sees only the GPUs gpus; a pool worker sees all
// of them (each task is told its own). Handler.Started follows once the
// process runs, and Handler.Gone if it ends before it connected. Under
// the lock.
func (p *Pool) Start(w *Worker, actor bool, gpus []int) {
	p.wg.Add(1)
	if p.cfg.Play != nil {
		go func() {
			defer p.wg.Done()
			p.ended(w, p.cfg.Play(p.sock, int(w.id)))
		}()
		return
	}
	env := append(append(os.Environ(), p.cfg.Env...),
		task.EnvSocket+"="+p.sock,
		task.EnvWorker+"="+strconv.Itoa(int(w.id)))
	if p.cfg.StoreDir != "" {
		env = append(env, task.EnvStore+"="+p.cfg.StoreDir, task.EnvCap+"="+strconv.FormatInt(p.cfg.StoreCap, 10))
	}
	s := workerproc.Spec{Path: p.cfg.Executable, Args: p.cfg.Args, Env: append(env, extraEnv(actor, gpus)...),
		ID: int(w.id), LogDir: p.cfg.LogDir, Output: p.cfg.Output}
	go func() {
		defer p.wg.Done()
		err := workerproc.Run(s, func(pr *os.Process) bool {
			p.mu.Lock()
			w.process = pr
			keep := p.h.Started(w)
			p.Unlock()
			return keep
		})
		p.ended(w, err)
	}()
}

// RemoteEnv is what worker w, started on another node of a cluster by its
// daemon, adds to its environment: where it connects (addr, over TCP,
// proving it holds token) and, for an actor's worker, the GPUs it sees.
func RemoteEnv(w *Worker, addr string, token []byte, actor bool, gpus []int) []string {
	env := []string{
		task.EnvSocket + "=tcp:" + addr,
		task.EnvWorker + "=" + strconv.Itoa(int(w.id)),
		task.EnvToken + "=" + hex.EncodeToString(token),
		task.EnvRemote + "=1",
	}
	for _, k := range []string{task.EnvDirect, task.EnvLeases} { // direct actor calls, leases (worker/direct.go, lease.go)
		if v := os.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return append(env, extraEnv(actor, gpus)...)
}

// extraEnv is what every worker's environment adds last.
func extraEnv(actor bool, gpus []int) []string {
	var env []string
	if actor {
		env = append(env, "CUDA_VISIBLE_DEVICES="+workerproc.JoinInts(gpus))
	}
	if os.Getenv("GORACE") == "" {
		// A race-enabled worker would otherwise sleep 1 s at every exit.
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	return env
}

// ended records that local worker w's process ended, how (err), and
// reports w gone if it never connected (else its connection's reader
// does).
func (p *Pool) ended(w *Worker, err error) {
	p.mu.Lock()
	w.err = err
	connected := w.conn != nil
	p.Unlock()
	close(w.exited)
	if !connected {
		p.h.Gone(w, nil)
	}
}

// Exited reports that remote worker w ended, or could not start (why
// says so): its node's daemon says. Not under the lock.
func (p *Pool) Exited(w *Worker, why error) {
	w.exitOnce.Do(func() {
		p.mu.Lock()
		w.err = why
		p.Unlock()
		close(w.exited)
	})
	p.mu.Lock()
	connected := w.conn != nil
	p.Unlock()
	if !connected {
		p.h.Gone(w, nil)
	}
}
