package control

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// TaskStarts records where tasks run (a Recorder does): a node given one
// (runtime/node's Config.Starts) calls TaskStarted, under its lock, each
// time it sends a task to a worker. node is the cluster node's ID ("" for
// the driver's own machine).
type TaskStarts interface {
	TaskStarted(id ids.TaskID, node string)
}

// RecorderConfig sets up a Recorder.
type RecorderConfig struct {
	// Node names the driver's own machine in the tables (tasks sent to
	// the driver's local workers): its cluster node's ID, or a label
	// such as "driver host-1" when no node of the cluster runs there.
	Node string
	// Buffer bounds the events waiting for the writer (0:
	// DefaultRecorderBuffer). Events past it are dropped and counted.
	Buffer int
	// MaxTasks bounds the task entries the job keeps in Redis (0: what
	// the head set, see ClusterSettings; else DefaultMaxTaskRecords). Past
	// it the oldest entries leave the table.
	MaxTasks int
	// Rate bounds the tasks recorded per second (0: DefaultRecordRate),
	// with bursts up to a second's worth: past it a task is not recorded
	// (counted as a dropped event), so that the writer's and Redis's
	// work stays bounded however fast the driver submits.
	Rate int
	// Warn receives the one line said when events are first dropped
	// (nil: discarded).
	Warn io.Writer
}

// DefaultRecordRate is how many tasks a second a driver records by
// default; Ray's state API bounds its task events likewise.
const DefaultRecordRate = 10000

// DefaultRecorderBuffer is how many events a Recorder holds for its writer
// by default: a burst this long is written in full however slow Redis is.
const DefaultRecorderBuffer = 1 << 16

// Recorder is the control store a cluster driver's node is given. It is
// a Store whose reads are answered from memory (a Mem) and whose every
// change — a task submitted, started, finished or failed, an actor
// created, placed, restarted or dead, a failure — is also recorded in
// the cluster's Redis, job-scoped, for `gray list` and the dashboard.
//
// The node calls the Store under its lock, on the path of every task, so
// a Recorder never waits there: an event is appended to a bounded buffer,
// and one goroutine (started by NewRecorder, stopped by Close) writes what
// gathered as one pipeline. When the buffer is full the event is dropped
// and counted (RecorderStats.Dropped, the job's "dropped"), and the
// driver is told once; a submission never blocks.
type Recorder struct {
	r      *Redis
	local  *Mem
	node   string
	max    int
	warn   io.Writer
	warned atomic.Bool

	mu      sync.Mutex
	buf     []event
	closed  bool
	dropped uint64
	// The token bucket of task submissions recorded (Rate).
	rate, burst, tokens float64
	refilled            int64 // Unix milliseconds
	// live lists the recorded tasks that have not ended: only their
	// later events are buffered.
	live map[ids.TaskID]struct{}
	// actors lists the actors created: their creation tasks stay live.
	actors map[ids.ActorID]struct{}

	kick  chan struct{}
	hurry chan struct{} // Flush: write now, not at the next interval
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once

	submitted, finished, failed atomic.Uint64
	written                     atomic.Uint64 // batches written
	// w is the writer goroutine's own state.
	w recordWriter
}

// evKind says what an event records.
type evKind uint8

const (
	evSubmitted evKind = iota + 1
	evStarted
	evFinished
	evFailed
	evActorCreated
	evActorPlaced // msg: the worker, "" while it starts again
	evActorDied
	evError
)

// event is one change, as the node reported it. It copies what it needs,
// so that it holds no pointer into the node's tasks.
type event struct {
	kind  evKind
	tkind task.Kind
	id    ids.TaskID
	actor ids.TaskID // a method's actor
	t     int64      // Unix milliseconds
	name  string     // function, or node for evStarted
	msg   string     // failure message
}

var (
	_ Store      = (*Recorder)(nil)
	_ TaskStarts = (*Recorder)(nil)
)

// NewRecorder returns a Recorder writing to r's job. Close stops it.
func NewRecorder(ctx context.Context, r *Redis, cfg RecorderConfig) *Recorder {
	rc := newRecorder(ctx, r, cfg)
	go rc.run()
	return rc
}

// newRecorder is NewRecorder without its writer started (tests fill the
// buffer first).
func newRecorder(ctx context.Context, r *Redis, cfg RecorderConfig) *Recorder {
	if cfg.Buffer <= 0 {
		cfg.Buffer = DefaultRecorderBuffer
	}
	if cfg.MaxTasks <= 0 {
		if set, err := r.Settings(ctx); err == nil && set.MaxTaskRecords > 0 {
			cfg.MaxTasks = set.MaxTaskRecords
		} else {
			cfg.MaxTasks = DefaultMaxTaskRecords
		}
	}
	rc := &Recorder{
		r: r, local: NewMem(), node: cfg.Node, max: cfg.Buffer, warn: cfg.Warn,
		kick: make(chan struct{}, 1), hurry: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	if cfg.Rate <= 0 {
		cfg.Rate = DefaultRecordRate
	}
	rc.rate, rc.burst = float64(cfg.Rate)/1000, float64(cfg.Rate)
	rc.tokens, rc.refilled = rc.burst, now()
	rc.live = map[ids.TaskID]struct{}{}
	rc.actors = map[ids.ActorID]struct{}{}
	rc.w.init(rc, cfg.MaxTasks)
	return rc
}

// push buffers an event for the writer; it never blocks.
func (rc *Recorder) push(e event) {
	rc.mu.Lock()
	rc.pushLocked(e)
}

// admitLocked decides whether a submitted task is recorded (the token
// bucket of Rate) and, if so, lists it as live so that its later events
// are recorded too. Called with rc.mu held.
func (rc *Recorder) admitLocked(id ids.TaskID, t int64, always bool) bool {
	if dt := t - rc.refilled; dt > 0 {
		rc.tokens = min(rc.burst, rc.tokens+float64(dt)*rc.rate)
		rc.refilled = t
	}
	if rc.tokens < 1 && !always {
		return false
	}
	rc.tokens--
	rc.live[id] = struct{}{}
	return true
}

// pushLocked is push with rc.mu held; it unlocks.
func (rc *Recorder) pushLocked(e event) {
	if rc.closed || len(rc.buf) >= rc.max {
		if !rc.closed {
			rc.dropped++
		}
		rc.mu.Unlock()
		rc.warnDropped()
		return
	}
	rc.buf = append(rc.buf, e)
	first := len(rc.buf) == 1
	rc.mu.Unlock()
	if first {
		select {
		case rc.kick <- struct{}{}:
		default:
		}
	}
}

func (rc *Recorder) warnDropped() {
	if rc.warn != nil && rc.warned.CompareAndSwap(false, true) {
		fmt.Fprintf(rc.warn, "gray: this job submits tasks faster than the cluster's task table records them (%g a second, %d events buffered): the others are counted, not listed, so `gray list` shows only part of this job's tasks\n", rc.rate*1000, rc.max)
	}
}

func now() int64 { return time.Now().UnixMilli() }

// TaskSubmitted implements Store. A task past the rate is counted as a
// dropped event and its later events cost one map lookup.
func (rc *Recorder) TaskSubmitted(s *task.Spec) {
	rc.submitted.Add(1)
	t := now()
	rc.mu.Lock()
	// Actor creations are always recorded: the actor table needs them.
	if !rc.admitLocked(s.ID, t, s.Kind == task.KindActorCreate) {
		rc.dropped++
		rc.mu.Unlock()
		rc.warnDropped()
		return
	}
	e := event{kind: evSubmitted, tkind: s.Kind, id: s.ID, t: t, name: s.Func}
	if s.Kind == task.KindActorMethod {
		e.actor = s.Actor()
	}
	rc.pushLocked(e)
}

// TaskStarted implements TaskStarts.
func (rc *Recorder) TaskStarted(id ids.TaskID, node string) {
	rc.mu.Lock()
	if _, ok := rc.live[id]; !ok {
		rc.mu.Unlock()
		return
	}
	rc.pushLocked(event{kind: evStarted, id: id, t: now(), name: node})
}

// TaskFinished implements Store.
func (rc *Recorder) TaskFinished(id ids.TaskID, err *task.TaskError) {
	rc.finished.Add(1)
	if err != nil {
		rc.failed.Add(1)
	}
	rc.mu.Lock()
	if _, ok := rc.live[id]; !ok {
		rc.mu.Unlock()
		return
	}
	if _, actor := rc.actors[id]; !actor {
		delete(rc.live, id) // an actor's stays: a restart sends its constructor again
	}
	if err != nil {
		rc.pushLocked(event{kind: evFailed, id: id, t: now(), msg: shortMessage(err.Message)})
		return
	}
	rc.pushLocked(event{kind: evFinished, id: id, t: now()})
}

// shortMessage is the first line of a failure, at most 300 bytes: the
// table says what failed; the error log and the driver have the rest.
func shortMessage(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// ActorCreated implements Store.
func (rc *Recorder) ActorCreated(id ids.ActorID, typ, worker string) {
	rc.local.ActorCreated(id, typ, worker)
	rc.mu.Lock()
	rc.actors[id] = struct{}{}
	rc.live[id] = struct{}{}
	rc.pushLocked(event{kind: evActorCreated, id: id, t: now(), name: typ})
}

// ActorPlaced implements Store. A worker of "" is the actor starting
// again after its process died: a restart.
func (rc *Recorder) ActorPlaced(id ids.ActorID, worker string) {
	rc.local.ActorPlaced(id, worker)
	rc.push(event{kind: evActorPlaced, id: id, t: now(), msg: worker})
}

// ActorDied implements Store.
func (rc *Recorder) ActorDied(id ids.ActorID, reason string) {
	rc.local.ActorDied(id, reason)
	rc.push(event{kind: evActorDied, id: id, t: now()})
}

// Actor implements Store from memory, then from the job's actor table.
func (rc *Recorder) Actor(id ids.ActorID) (ActorRecord, bool) {
	if rec, ok := rc.local.Actor(id); ok {
		return rec, true
	}
	return rc.r.Actor(id)
}

// AddError implements Store.
func (rc *Recorder) AddError(e *task.TaskError) {
	rc.local.AddError(e)
	rc.push(event{kind: evError, t: now(), name: e.Function, msg: e.Worker + "\x00" + e.Message})
}

// Errors implements Store.
func (rc *Recorder) Errors() []*task.TaskError { return rc.local.Errors() }

// RecorderStats counts a Recorder's work.
type RecorderStats struct {
	Submitted, Finished, Failed uint64
	// Dropped counts events lost because the buffer was full; Evicted
	// task entries that left the table for the cap on entries per job.
	Dropped, Evicted uint64
	Batches          uint64
}

// Stats returns the counts so far.
func (rc *Recorder) Stats() RecorderStats {
	rc.mu.Lock()
	dropped := rc.dropped
	rc.mu.Unlock()
	return RecorderStats{
		Submitted: rc.submitted.Load(), Finished: rc.finished.Load(), Failed: rc.failed.Load(),
		Dropped: dropped, Evicted: rc.w.evicted.Load(), Batches: rc.written.Load(),
	}
}

// Flush waits until every event recorded before the call is in Redis, or
// ctx ends.
func (rc *Recorder) Flush(ctx context.Context) error {
	for {
		rc.mu.Lock()
		empty := len(rc.buf) == 0
		rc.mu.Unlock()
		if empty && rc.w.idle.Load() {
			// A batch taken before the call may still be in flight:
			// idle is set only once it was written.
			return nil
		}
		for _, ch := range []chan struct{}{rc.kick, rc.hurry} {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("control: flushing the task table to Redis: %w", ctx.Err())
		case <-rc.done:
			return nil
		case <-time.After(time.Millisecond):
		}
	}
}

// Close writes what is buffered (waiting at most 5 s for Redis) with the
// job's final counts, and stops the writer. The Redis client stays open:
// its owner closes it.
func (rc *Recorder) Close() error {
	var err error
	rc.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = rc.Flush(ctx)
		rc.mu.Lock()
		rc.closed = true
		rc.mu.Unlock()
		close(rc.stop)
		<-rc.done
		if werr := rc.w.writeCounts(ctx); werr != nil && err == nil {
			err = werr
		}
	})
	return err
}

// writeEvery is the least time between two of a Recorder's writes: what
// gathers meanwhile goes as one pipeline, so a driver running one short
// task at a time costs Redis (and its own cores) at most this many
// wake-ups a second, not one per task.
const writeEvery = 100 * time.Millisecond

// run is the writer goroutine: it takes what gathered in the buffer and
// writes it as one pipeline, at most every writeEvery, until Close.
func (rc *Recorder) run() {
	defer close(rc.done)
	var spare []event
	backoff := time.Duration(0)
	last := time.Time{}
	for {
		rc.w.idle.Store(true)
		select {
		case <-rc.stop:
			return
		case <-rc.kick:
		}
		if wait := writeEvery - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-rc.stop:
				t.Stop()
				return
			case <-t.C:
			case <-rc.hurry:
				t.Stop()
			}
		}
		last = time.Now()
		for {
			rc.mu.Lock()
			if len(rc.buf) == 0 {
				rc.mu.Unlock()
				break
			}
			rc.w.idle.Store(false)
			batch := rc.buf
			rc.buf = spare[:0]
			dropped := rc.dropped
			rc.mu.Unlock()
			cmds := rc.w.build(batch, dropped)
			for !rc.w.exec(cmds) {
				// Redis is away (the client reports the outage): the
				// batch is tried again while new events fill the
				// buffer, then are dropped and counted.
				backoff = min(max(2*backoff, 50*time.Millisecond), time.Second)
				select {
				case <-rc.stop:
					return
				case <-time.After(backoff):
				}
			}
			backoff = 0
			rc.written.Add(1)
			clear(batch) // drop the strings it held
			spare = batch
		}
	}
}
