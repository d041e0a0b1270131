package task

import (
	"context"
	"sync"

	"github.com/gray-ml/gray/runtime/ids"
)

// Message types of the driver–worker protocol. W→D: sent by a worker; D→W:
// sent by the driver.
const (
	MsgHello        byte = 1 + iota // W→D: worker number
	MsgExec                         // D→W: a Spec to run
	MsgResult                       // W→D: task ID, then its return objects
	MsgSubmit                       // W→D: a Spec submitted by a running task
	MsgPut                          // W→D: object ID, object
	MsgGet                          // W→D: request number, object IDs
	MsgGetReply                     // D→W: request number, objects
	MsgWait                         // W→D: request number, count wanted, timeout (ns, 0 = none), object IDs
	MsgWaitReply                    // D→W: request number, one ready flag per ID
	MsgKillActor                    // W→D: actor ID
	MsgRetire                       // W→D: the worker reached a max_calls limit and is exiting
	MsgExit                         // D→W: exit now
	MsgRecall                       // D→W: hand back the tasks queued behind the running one
	MsgGiveBack                     // W→D: task IDs handed back, never started
	MsgDrop                         // W→D: object IDs the worker no longer refers to
	MsgFree                         // W→D: object IDs the program freed explicitly (gray.Free)
	MsgReserve                      // W→D: request number, object ID, size: reserve room for a task result
	MsgReserveReply                 // D→W: request number, status (ReserveOK, ReserveExists, ReserveFailed), message
	MsgCheckpoint                   // W→D: the actor call it follows (task ID), ok byte, then the checkpoint's bytes or the error's text
	MsgLocate                       // D→W: count, then per object its ID and the address of a transfer server holding it (cluster): pull it before mapping it
)

// Status of a MsgReserveReply.
const (
	ReserveOK     byte = iota // "<id>.tmp" is ready: open it with objstore.OpenReserved
	ReserveExists             // the object exists (a lineage rebuild of a task whose other returns survived)
	ReserveFailed             // the message says why (no room, say)
)

// Environment variables that put a process into worker mode.
const (
	EnvSocket = "GRAY_WORKER_SOCKET" // the driver's socket path
	EnvWorker = "GRAY_WORKER_ID"     // the worker's number
	EnvStore  = "GRAY_STORE_DIR"     // the node's shared-memory object store directory ("" : none)
	EnvCap    = "GRAY_STORE_CAP"     // the store's capacity in bytes
	EnvToken  = "GRAY_WORKER_TOKEN"  // hex: the cluster token, for a socket "tcp:HOST:PORT"
	EnvRemote = "GRAY_WORKER_REMOTE" // "1": on another node than the driver; large values go into its node's store (EnvStore), or inline without one
)

// Info describes the task a worker is running; the runtime puts it in the
// task's context.
type Info struct {
	Task   string // task ID, hex
	Worker string
	GPUIDs []int

	mu     sync.Mutex
	after  []func()
	marked map[any]bool
}

// AfterOnce registers fn to run after the task finishes, once per key, in
// registration order. Reusable variables use it for their reinitialisers.
func (i *Info) AfterOnce(key any, fn func()) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.marked == nil {
		i.marked = map[any]bool{}
	}
	if i.marked[key] {
		return
	}
	i.marked[key] = true
	i.after = append(i.after, fn)
}

// RunAfter runs the functions registered with AfterOnce.
func (i *Info) RunAfter() {
	i.mu.Lock()
	fns := i.after
	i.after, i.marked = nil, nil
	i.mu.Unlock()
	for _, f := range fns {
		f()
	}
}

// ResultSink is where a running task's large return values go: the
// worker that runs it, which writes them into the node's shared-memory
// object store.
type ResultSink interface {
	// SharedDir is the store's directory; "" means none: results go inline.
	SharedDir() string
	// StoreResult writes return value i, size bytes made by encode.
	StoreResult(i int, size int, encode func([]byte) error) error
	// ContainResult says return value i holds references to children,
	// which then live as long as it does.
	ContainResult(i int, children []ids.ObjectID)
}

type infoKey struct{}

// WithInfo returns ctx carrying i.
func WithInfo(ctx context.Context, i *Info) context.Context {
	return context.WithValue(ctx, infoKey{}, i)
}

// InfoFrom returns the Info in ctx, or nil outside a task.
func InfoFrom(ctx context.Context) *Info {
	if ctx == nil {
		return nil
	}
	i, _ := ctx.Value(infoKey{}).(*Info)
	return i
}
