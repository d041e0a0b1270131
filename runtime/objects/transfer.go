package objects

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gray-ml/gray/runtime/codec"
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/recovery"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/state"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/transfer"
	"github.com/gray-ml/gray/runtime/wire"
)

// Objects across the nodes of a cluster.
//
// An object stays in the store of the node that made it: a leased
// worker writes its large results and Puts into its node's store and its
// MsgResult or MsgPut says only "shared, this size"; the driver records
// the node as the object's holder (the recovery core's Held). Nothing moves
// until someone needs the bytes:
//
//   - a worker (on any node, the driver's included) gets MsgLocate before
//     the task or Get reply that names an object its node's store may
//     lack: the transfer address of a holder (another node, or the
//     driver's own server). It pulls the object into its node's store
//     itself (runtime/worker/remote_store.go), so an object made on node B
//     and needed on node C goes from B to C without the driver;
//   - the driver's Get pulls into the driver's store (PullLocal), then
//     maps it zero-copy like any local object.
//
// Freeing an object tells its holders, and the nodes it was sent to, to
// drop their copies (RemoteObjects.ReleaseObjects), once no task that was
// sent it still runs (remote pins). When a node dies, the objects only it
// held are lost (recovery.NodeGone): those with lineage are rebuilt when next
// needed, like evicted objects (keeper.go, lost.go); the others (Puts,
// actor results) become an ObjectLostError naming the node. A task whose
// worker could not pull an argument (transfer.ErrPull) is run again once
// its arguments exist again.

// NodeID names a node of the cluster (sched.Local, 0, is the driver's
// own).
type NodeID = sched.NodeID

// RemoteObjects moves objects between a cluster's nodes (cluster.Driver
// implements it; the driver's node gets it as cluster.DriverNode.Objects).
// Its methods must not block.
type RemoteObjects interface {
	// ObjectAddr returns the transfer address of node k's object store.
	ObjectAddr(k NodeID) string
	// ReleaseObjects tells node k that the objects (hex IDs) were freed.
	ReleaseObjects(k NodeID, hexIDs []string)
}

// LocationTable records where objects live (control.Redis implements it).
// Its methods must not block: they are called under the node's lock.
type LocationTable interface {
	AddLocation(id ids.ObjectID, node string)
	RemoveLocation(id ids.ObjectID, node string)
	// ForgetNodeQueued removes every entry for a node that died.
	ForgetNodeQueued(node string)
}

// remote is a cluster driver's view of objects on other nodes. Which
// nodes hold or were sent which objects, and which are pinned there, is
// the recovery core's.
type remote struct {
	ro     RemoteObjects // nil: the cluster moves no objects (tests)
	locs   LocationTable // nil: none kept
	srv    *transfer.Server
	addr   string // the driver's transfer server
	client *transfer.Client
	cancel context.CancelFunc
	ctx    context.Context
	pulls  map[ids.ObjectID]chan struct{} // driver pulls in flight
	pulled atomic.Int64
}

// Transfer configures the objects' side of a cluster driver.
type Transfer struct {
	// Workers is the address the driver's workers connect to: its
	// transfer server listens on that host.
	Workers   string
	Token     []byte // the cluster token every connection proves
	Remote    RemoteObjects
	Locations LocationTable
}

// StartTransfer starts the driver's transfer server (on the host of
// t.Workers, which its workers reach, with the cluster's token, which the
// driver's own workers prove too when they pull) and its transfer client:
// from now on objects may live on other nodes. Called once, before any
// other method.
func (k *Keeper[T]) StartTransfer(t Transfer) error {
	host, _, err := net.SplitHostPort(t.Workers)
	if err != nil {
		return fmt.Errorf("gray: the cluster's worker address %q: %w", t.Workers, err)
	}
	ln, err := transfer.Listen(net.JoinHostPort(host, "0"), t.Token)
	if err != nil {
		return fmt.Errorf("gray: listening for object transfers on %s: %w", host, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &remote{
		ro: t.Remote, locs: t.Locations, addr: ln.Addr().String(), client: transfer.NewClient(t.Token),
		ctx: ctx, cancel: cancel, pulls: map[ids.ObjectID]chan struct{}{},
	}
	if k.shared != nil {
		// Adopting: the driver's own workers pull objects into its store
		// directory themselves.
		r.srv = transfer.NewServer(transfer.AdoptingSource(k.shared))
	} else {
		r.srv = transfer.NewServer(transfer.Chain())
	}
	k.remote = r
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		_ = r.srv.Serve(ctx, ln)
	}()
	return nil
}

// Shut tells the Keeper that the node shuts down (under its lock): the
// store is closed next, so nothing is unpinned or pulled any more.
func (k *Keeper[T]) Shut() { k.closed = true }

// Close stops the transfer server and client and waits for the pulls and
// the server to end. Called without the node's lock, after Shut.
func (k *Keeper[T]) Close() {
	if r := k.remote; r != nil {
		r.cancel()
		r.client.Close()
	}
	k.wg.Wait()
}

// Clustered reports whether objects may live on other nodes.
func (k *Keeper[T]) Clustered() bool { return k.remote != nil }

// Stats returns the counts of the driver's objects across nodes (zero
// outside a cluster).
func (k *Keeper[T]) Stats() state.ObjectStats {
	r := k.remote
	if r == nil {
		return state.ObjectStats{}
	}
	s := k.rec.Stats()
	return state.ObjectStats{Served: r.srv.Served(), Pulled: r.pulled.Load(), Remote: k.rec.Remote(),
		Lost: s.Lost, Rebuilt: s.Rebuilt, LastRebuilt: s.LastRebuilt, Retried: s.Retried}
}

// RemoteOnly reports whether object id is held by other nodes and not by
// the driver's store.
func (k *Keeper[T]) RemoteOnly(id ids.ObjectID) bool {
	return k.rec.HasRemote(id) && !k.local(id)
}

// source returns where a worker of node n pulls object id from, and
// whether it must: "" when n's store holds it or nobody does.
func (k *Keeper[T]) source(n NodeID, id ids.ObjectID) (string, bool) {
	r := k.remote
	hs := k.rec.Holders(id)
	for _, h := range hs {
		if h == n {
			return "", false
		}
	}
	if n == sched.Local {
		if k.shared.Contains(StoreID(id)) || len(hs) == 0 || r.ro == nil {
			return "", false
		}
		return r.ro.ObjectAddr(hs[0]), true
	}
	if k.local(id) {
		return r.addr, true
	}
	if len(hs) == 0 || r.ro == nil {
		return "", false
	}
	return r.ro.ObjectAddr(hs[0]), true
}

// AdoptRemote records a large value o that a worker on node n (not the
// driver's) wrote into its node's store: it stays there, n its holder.
// Outside a cluster's object transfer, a value sent inline is stored in
// the driver's shared memory instead, so Get maps it without a copy; one
// that does not fit stays inline.
func (k *Keeper[T]) AdoptRemote(id ids.ObjectID, o task.Object, n NodeID) task.Object {
	if o.Shared && o.Err == nil && k.remote != nil {
		k.Recover(recovery.Held{ID: id, Node: n})
		return o
	}
	if o.Shared || o.Err != nil || k.shared == nil || len(o.Data) < codec.InlineThreshold || !codec.IsZeroCopy(o.Data) {
		return o
	}
	w, err := k.shared.Create(StoreID(id), int64(len(o.Data)))
	if err != nil {
		return o // kept inline: Get copies
	}
	copy(w.Bytes(), o.Data)
	if err := w.Seal(); err != nil {
		return o
	}
	return task.Object{Shared: true, Size: int64(len(o.Data))}
}

// Location is where a worker pulls one object from.
type Location struct {
	ID   ids.ObjectID
	Addr string
}

// Locate returns, before a message to a worker on node n that names the
// shared objects oids, where the worker pulls those its node's store may
// lack from (nil: none; then no MsgLocate is sent). An object sent to
// another node is released there with it.
func (k *Keeper[T]) Locate(n NodeID, oids []ids.ObjectID) []Location {
	if k.remote == nil {
		return nil
	}
	var locs []Location
	for _, id := range oids {
		obj, ok := k.store.Get(id)
		if !ok || !obj.Shared || obj.Err != nil {
			continue
		}
		addr, pull := k.source(n, id)
		if !pull {
			continue
		}
		locs = append(locs, Location{id, addr})
		if n != sched.Local {
			k.rec.Step(recovery.Sent{ID: id, Node: n})
		}
	}
	return locs
}

// LocateArgs is Locate for the shared arguments of a task s sent to a
// worker on node n.
func (k *Keeper[T]) LocateArgs(n NodeID, s *task.Spec) []Location {
	if k.remote == nil {
		return nil
	}
	var oids []ids.ObjectID
	for i := range s.Args {
		if a := &s.Args[i]; a.IsRef || a.Shared {
			oids = append(oids, a.Ref)
		}
	}
	return k.Locate(n, oids)
}

// AppendLocate appends the body of a MsgLocate naming locs.
func AppendLocate(b []byte, locs []Location) []byte {
	b = wire.AppendUvarint(b, uint64(len(locs)))
	for _, l := range locs {
		b = append(b, l.ID[:]...)
		b = wire.AppendString(b, l.Addr)
	}
	return b
}

// pinRemote keeps object id, held by other nodes only, from being released
// on them while a task that takes it may still pull it. It reports whether
// it did (the caller's claim then records it).
func (k *Keeper[T]) pinRemote(id ids.ObjectID) bool {
	if !k.RemoteOnly(id) {
		return false
	}
	k.rec.Step(recovery.Pinned{ID: id})
	return true
}

// unpinRemote ends a pin of pinRemote; it reports false for a pin of the
// driver's store.
func (k *Keeper[T]) unpinRemote(id ids.ObjectID) bool {
	if k.remote == nil || k.rec.RemotePins(id) == 0 {
		return false
	}
	k.Recover(recovery.Unpinned{ID: id})
	return true
}

// PullLocal makes a remote object local for the driver's Get: it returns
// a channel closed once the pull ended (then Get looks again), or nil when
// the object needs no pull. The pull runs on a goroutine of the Keeper's,
// which takes the node's lock (Config.Lock) to record how it ended.
func (k *Keeper[T]) PullLocal(id ids.ObjectID) <-chan struct{} {
	r := k.remote
	if r == nil || k.shared == nil || !k.RemoteOnly(id) {
		return nil
	}
	sid := StoreID(id)
	if k.shared.Adopt(sid) == nil {
		return nil // one of the driver's workers pulled it already
	}
	if ch := r.pulls[id]; ch != nil {
		return ch
	}
	ch := make(chan struct{})
	r.pulls[id] = ch
	h := k.rec.Holders(id)[0]
	addr := ""
	if r.ro != nil {
		addr = r.ro.ObjectAddr(h)
	}
	size := int64(0)
	if obj, ok := k.store.Get(id); ok {
		size = obj.Size
	}
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		err := r.client.Fetch(r.ctx, addr, transfer.ObjectKey(id), transfer.StoreSink(k.shared))
		if err == nil {
			r.pulled.Add(size)
		} else if k.adoptPulled(r.ctx, sid) {
			err = nil // one of the driver's workers was pulling it into the same store
		}
		k.lock()
		delete(r.pulls, id)
		if err != nil && !k.closed && !k.shared.Contains(sid) {
			k.Recover(recovery.HolderGone{ID: id, Node: h, Why: fmt.Sprintf("pulling it from node %s failed: %v", k.rec.Name(h), err), Gone: serverGone(err)})
		}
		close(ch)
		k.unlock()
	}()
	return ch
}

// serverGone reports whether a failed pull says that nothing serves the
// node's objects any more (refused, or the connection cut by the peer):
// its process, and the worker that made the object, are gone, whether or
// not the node's death is known yet.
func serverGone(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// adoptPulled waits while another process of the driver's node (one of its
// workers) writes object sid into the driver's store, and reports whether
// the store then holds it (adopted). The driver's pull and a worker's pull
// of one object race to create its file; the loser's pull fails, and the
// holder must not be dropped for that.
func (k *Keeper[T]) adoptPulled(ctx context.Context, sid objstore.ID) bool {
	ctx, cancel := context.WithTimeout(ctx, pullWaitTimeout)
	defer cancel()
	if !objstore.WaitSealed(ctx, k.shared.Dir(), sid) {
		return false
	}
	_ = k.shared.Adopt(sid) // ErrExists: the driver's server adopted it meanwhile
	return k.shared.Contains(sid)
}

// pullWaitTimeout bounds the wait for another process's pull of an object.
const pullWaitTimeout = 2 * time.Minute

// ArgsGone reports whether a shared argument that task s was sent (its
// spec as sent: references resolved) is held by no store any more: the
// task, run again, must claim its arguments again so that they are
// rebuilt first.
func (k *Keeper[T]) ArgsGone(s *task.Spec) bool {
	for _, a := range s.Args {
		if a.Shared && !a.IsRef && !k.rec.HasRemote(a.Ref) && !k.local(a.Ref) {
			return true
		}
	}
	return false
}

// RetryPull decides for function task t whose worker (named worker)
// could not pull one of its arguments (its holder died or dropped it;
// objs are what the task returned): the holder is dropped and t runs
// again (Tasks.Apply with Rerun), rebuilding the argument first if nobody
// holds it any more. It reports whether t runs again; false: its failure
// stands (not a failed pull, or tried too often).
func (k *Keeper[T]) RetryPull(t T, worker string, objs []task.Object) bool {
	if k.remote == nil || len(objs) == 0 || objs[0].Err == nil {
		return false
	}
	id, ok := transfer.FailedPull(objs[0].Err)
	if !ok {
		return false
	}
	msg, _, _ := strings.Cut(objs[0].Err.Message, "\n")
	why := fmt.Sprintf("%s could not pull it: %s", worker, msg)
	for _, e := range k.Recover(recovery.PullFailed[T]{Task: t, ID: id, Why: why, Local: k.local(id)}) {
		if e.Kind == recovery.Rerun {
			return true
		}
	}
	return false
}

// localityBytes is the least size of a task's arguments on one node that
// makes the task prefer that node.
const localityBytes = 1 << 20

// Near returns the node holding the most bytes of the shared arguments
// args, if they are localityBytes or more (the task is then submitted
// there when that node has room: sched.SubmittedNear).
func (k *Keeper[T]) Near(args []task.Arg) (NodeID, bool) {
	if k.remote == nil || k.shared == nil {
		return 0, false
	}
	var bytes map[NodeID]int64
	for _, a := range args {
		if !a.IsRef {
			continue
		}
		obj, ok := k.store.Get(a.Ref)
		if !ok || !obj.Shared || obj.Err != nil || obj.Size < localityBytes/16 {
			continue
		}
		if bytes == nil {
			bytes = map[NodeID]int64{}
		}
		if k.shared.Contains(StoreID(a.Ref)) {
			bytes[sched.Local] += obj.Size
			continue
		}
		for _, n := range k.rec.Holders(a.Ref) {
			bytes[n] += obj.Size
		}
	}
	best, most := NodeID(0), int64(localityBytes-1)
	found := false
	for n, b := range bytes {
		if b > most || (b == most && found && n < best) {
			best, most, found = n, b, true
		}
	}
	return best, found
}
