// Package events records when each task ran on which worker, for the
// dashboard's timeline and `gray timeline`. The recorder is a fixed ring
// buffer written with one short critical section per finished task and no
// allocation, so the scheduler can keep it on without noticing: the
// oldest events give way to new ones.
package events

import (
	"sync"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
)

// DefaultCapacity is the number of events a Recorder keeps by default.
const DefaultCapacity = 1 << 16

// Event is one task's run on one worker. Start and End are nanoseconds
// since the recorder's epoch (see Recorder.Epoch).
type Event struct {
	Task   ids.TaskID
	Func   string
	Worker int32
	Start  int64
	End    int64
}

// slot is an Event in the ring. It holds no pointers (the function is an
// index into the recorder's names), so the garbage collector never scans
// the ring however large it is.
type slot struct {
	task   ids.TaskID
	fn     uint32
	worker int32
	start  int64
	end    int64
}

// Recorder keeps the latest task events in a ring buffer. Its methods are
// safe for concurrent use; a nil *Recorder records nothing.
type Recorder struct {
	epoch time.Time

	mu    sync.Mutex
	buf   []slot
	names []string          // function names, by index
	index map[string]uint32 // and their indexes
	next  uint64            // events recorded so far
	last  []int64           // by worker ID: when its last task ended
	far   map[int]int64     // the same, for the workers of other nodes (IDs of 1<<16 and more)
}

// New returns a recorder that keeps the latest capacity events (0:
// DefaultCapacity).
func New(capacity int) *Recorder {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	return &Recorder{epoch: time.Now(), buf: make([]slot, capacity), index: map[string]uint32{}}
}

// Now is the time in the recorder's clock: nanoseconds since its epoch,
// read from the monotonic clock. A nil recorder returns 0.
func (r *Recorder) Now() int64 {
	if r == nil {
		return 0
	}
	return int64(time.Since(r.epoch))
}

// Epoch is the wall-clock time the recorder's clock counts from.
func (r *Recorder) Epoch() time.Time { return r.epoch }

// Finished records that task (function fn) ended now on worker, having
// been handed to it at sent (a time from Now). Workers run their tasks one
// after the other, so the task started when it was sent or when the
// worker's previous task ended, whichever came later.
func (r *Recorder) Finished(worker int, task ids.TaskID, fn string, sent int64) {
	if r == nil {
		return
	}
	end := r.Now()
	w := int32(worker)
	r.mu.Lock()
	start := sent
	if worker >= 1<<16 { // a worker on another node of a cluster
		if r.far == nil {
			r.far = map[int]int64{}
		}
		start = max(start, r.far[worker])
		r.far[worker] = end
	} else if worker >= 0 {
		if worker >= len(r.last) {
			r.last = append(r.last, make([]int64, worker+1-len(r.last))...)
		}
		start = max(start, r.last[worker])
		r.last[worker] = end
	}
	i, ok := r.index[fn]
	if !ok {
		i = uint32(len(r.names))
		r.names = append(r.names, fn)
		r.index[fn] = i
	}
	r.buf[r.next%uint64(len(r.buf))] = slot{task: task, fn: i, worker: w, start: start, end: end}
	r.next++
	r.mu.Unlock()
}

// Events returns the recorded events still in the buffer, oldest first,
// and how many older ones were overwritten.
func (r *Recorder) Events() (evs []Event, dropped uint64) {
	if r == nil {
		return nil, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := uint64(len(r.buf))
	var slots []slot
	if r.next <= n {
		slots = r.buf[:r.next]
	} else {
		head := r.next % n
		slots = append(append(make([]slot, 0, n), r.buf[head:]...), r.buf[:head]...)
		dropped = r.next - n
	}
	evs = make([]Event, len(slots))
	for i, sl := range slots {
		evs[i] = Event{Task: sl.task, Func: r.names[sl.fn], Worker: sl.worker, Start: sl.start, End: sl.end}
	}
	return evs, dropped
}
