package node

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/recovery"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/transfer"
	"github.com/gray-ml/gray/runtime/wire"
)

// Objects across the nodes of a cluster.
//
// An object stays in the store of the node that made it: a leased
// worker writes its large results and Puts into its node's store and its
// MsgResult or MsgPut says only "shared, this size"; the driver records
// the node as the object's holder (objectsState.holders). Nothing moves
// until someone needs the bytes:
//
//   - a worker (on any node, the driver's included) gets MsgLocate before
//     the task or Get reply that names an object its node's store may
//     lack: the transfer address of a holder (another node, or the
//     driver's own server). It pulls the object into its node's store
//     itself (runtime/worker/remote_store.go), so an object made on node B
//     and needed on node C goes from B to C without the driver;
//   - the driver's Get pulls into the driver's store (pullLocal), then
//     maps it zero-copy like any local object.
//
// Freeing an object tells its holders, and the nodes it was sent to, to
// drop their copies (RemoteObjects.ReleaseObjects), once no task that was
// sent it still runs (remote pins). When a node dies, the objects only it
// held are lost (objectsGone): those with lineage are rebuilt when next
// needed, like evicted objects (objects.go, lost.go); the others (Puts,
// actor results) become an ObjectLostError naming the node. A task whose
// worker could not pull an argument (transfer.ErrPull) is run again once
// its arguments exist again.

// RemoteObjects is the part of a Remote that moves objects (cluster.Driver
// implements it). Its methods must not block.
type RemoteObjects interface {
	// ObjectAddr returns the transfer address of node k's object store.
	ObjectAddr(k sched.NodeID) string
	// ReleaseObjects tells node k that the objects (hex IDs) were freed.
	ReleaseObjects(k sched.NodeID, hexIDs []string)
}

// ObjectStats counts the movement of a cluster driver's objects.
type ObjectStats struct {
	Served  int64 // bytes the driver's transfer server sent to other nodes
	Pulled  int64 // bytes the driver pulled into its store for its Gets
	Remote  int   // objects held by other nodes only, now
	Lost    int   // objects lost with their node (or a failed pull)
	Rebuilt int   // of those, rebuilt from lineage
	// LastRebuilt is when the last lost object was rebuilt.
	LastRebuilt time.Time
	// Retried counts tasks run again because a worker could not pull an
	// argument.
	Retried int
}

// objectsState is a cluster driver's view of objects on other nodes;
// guarded by Node.mu unless said otherwise.
type objectsState struct {
	ro     RemoteObjects // nil: the Remote moves no objects (tests)
	srv    *transfer.Server
	ln     net.Listener
	addr   string // the driver's transfer server
	client *transfer.Client
	cancel context.CancelFunc
	ctx    context.Context

	// Which nodes hold or were sent which objects, and which are pinned
	// there, is the recovery core's (Node.rec).
	pulls  map[ids.ObjectID]chan struct{} // driver pulls in flight
	pulled atomic.Int64
}

// startObjects starts the driver's transfer server (on the host its
// workers dial) and its transfer client.
func (n *Node) startObjects() error {
	host, _, err := net.SplitHostPort(n.remote.addr)
	if err != nil {
		return fmt.Errorf("gray: the cluster's worker address %q: %w", n.remote.addr, err)
	}
	ln, err := transfer.Listen(net.JoinHostPort(host, "0"), n.remote.cfg.Token)
	if err != nil {
		return fmt.Errorf("gray: listening for object transfers on %s: %w", host, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &objectsState{
		ln: ln, addr: ln.Addr().String(), client: transfer.NewClient(n.remote.cfg.Token), ctx: ctx, cancel: cancel,
		pulls: map[ids.ObjectID]chan struct{}{},
	}
	o.ro, _ = n.remote.cfg.Remote.(RemoteObjects)
	if n.shared != nil {
		// Adopting: the driver's own workers pull objects into its store
		// directory themselves.
		o.srv = transfer.NewServer(transfer.AdoptingSource(n.shared))
	} else {
		o.srv = transfer.NewServer(transfer.Chain())
	}
	n.remote.objs = o
	// The driver's own workers pull too: they prove the token.
	n.cfg.Env = append(n.cfg.Env, task.EnvToken+"="+hex.EncodeToString(n.remote.cfg.Token))
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		_ = o.srv.Serve(ctx, ln)
	}()
	return nil
}

// closeObjects stops the transfer server and client (Shutdown).
func (n *Node) closeObjects() {
	if n.remote == nil || n.remote.objs == nil {
		return
	}
	n.remote.objs.cancel()
	n.remote.objs.client.Close()
}

// ObjectStats returns the counts of the driver's objects across nodes
// (zero outside a cluster).
func (n *Node) ObjectStats() ObjectStats {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.remote == nil || n.remote.objs == nil {
		return ObjectStats{}
	}
	o, r := n.remote.objs, n.rec.Stats()
	return ObjectStats{Served: o.srv.Served(), Pulled: o.pulled.Load(), Remote: n.rec.Remote(),
		Lost: r.Lost, Rebuilt: r.Rebuilt, LastRebuilt: r.LastRebuilt, Retried: r.Retried}
}

func (n *Node) objects() *objectsState {
	if n.remote == nil {
		return nil
	}
	return n.remote.objs
}

// remoteOnly reports whether object id is held by other nodes and not by
// the driver's store.
func (n *Node) remoteOnly(id ids.ObjectID) bool {
	return n.rec.HasRemote(id) && (n.shared == nil || !n.shared.Contains(storeID(id)))
}

// sourceFor returns where a worker of node k pulls object id from, and
// whether it must: "" when k's store holds it or nobody does.
func (n *Node) sourceFor(k sched.NodeID, id ids.ObjectID) (string, bool) {
	o := n.objects()
	hs := n.rec.Holders(id)
	for _, h := range hs {
		if h == k {
			return "", false
		}
	}
	if k == sched.Local {
		if n.shared.Contains(storeID(id)) || len(hs) == 0 || o.ro == nil {
			return "", false
		}
		return o.ro.ObjectAddr(hs[0]), true
	}
	if n.shared != nil && n.shared.Contains(storeID(id)) {
		return o.addr, true
	}
	if len(hs) == 0 || o.ro == nil {
		return "", false
	}
	return o.ro.ObjectAddr(hs[0]), true
}

// locate queues, before a message to worker w that names the shared
// objects oids, a MsgLocate for those its node's store may lack.
func (n *Node) locate(w *proc, oids []ids.ObjectID) {
	o := n.objects()
	if o == nil {
		return
	}
	type loc struct {
		id   ids.ObjectID
		addr string
	}
	var locs []loc
	for _, id := range oids {
		obj, ok := n.store.Get(id)
		if !ok || !obj.Shared || obj.Err != nil {
			continue
		}
		addr, pull := n.sourceFor(w.node, id)
		if !pull {
			continue
		}
		locs = append(locs, loc{id, addr})
		if w.node != sched.Local {
			n.rec.Step(recovery.Sent{ID: id, Node: w.node})
		}
	}
	if len(locs) == 0 {
		return
	}
	_ = n.append(w, task.MsgLocate, func(b []byte) []byte {
		b = wire.AppendUvarint(b, uint64(len(locs)))
		for _, l := range locs {
			b = append(b, l.id[:]...)
			b = wire.AppendString(b, l.addr)
		}
		return b
	})
}

// locateArgs is locate for the shared arguments of a task sent to w.
func (n *Node) locateArgs(w *proc, s *task.Spec) {
	if n.objects() == nil {
		return
	}
	var oids []ids.ObjectID
	for i := range s.Args {
		if a := &s.Args[i]; a.IsRef || a.Shared {
			oids = append(oids, a.Ref)
		}
	}
	n.locate(w, oids)
}

// pinRemote keeps object id, held by other nodes only, from being released
// on them while task p, which takes it, may still pull it. It reports
// whether it did (p.addPin then records it).
func (n *Node) pinRemote(id ids.ObjectID) bool {
	if !n.remoteOnly(id) {
		return false
	}
	n.rec.Step(recovery.Pinned{ID: id})
	return true
}

// unpinRemote ends a pin of pinRemote; it reports false for a pin of the
// driver's store.
func (n *Node) unpinRemote(id ids.ObjectID) bool {
	if n.objects() == nil || n.rec.RemotePins(id) == 0 {
		return false
	}
	n.recover(recovery.Unpinned{ID: id})
	return true
}

// pullLocal makes a remote object local for the driver's Get: it returns a
// channel closed once the pull ended (then Get looks again), or nil when
// the object needs no pull.
func (n *Node) pullLocal(id ids.ObjectID) <-chan struct{} {
	o := n.objects()
	if o == nil || n.shared == nil || !n.remoteOnly(id) {
		return nil
	}
	sid := storeID(id)
	if n.shared.Adopt(sid) == nil {
		return nil // one of the driver's workers pulled it already
	}
	if ch := o.pulls[id]; ch != nil {
		return ch
	}
	ch := make(chan struct{})
	o.pulls[id] = ch
	k := n.rec.Holders(id)[0]
	addr := ""
	if o.ro != nil {
		addr = o.ro.ObjectAddr(k)
	}
	size := int64(0)
	if obj, ok := n.store.Get(id); ok {
		size = obj.Size
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		err := o.client.Fetch(o.ctx, addr, transfer.ObjectKey(id), transfer.StoreSink(n.shared))
		if err == nil {
			o.pulled.Add(size)
		} else if n.adoptPulled(o.ctx, sid) {
			err = nil // one of the driver's workers was pulling it into the same store
		}
		n.mu.Lock()
		delete(o.pulls, id)
		if err != nil && !n.closed && !n.shared.Contains(sid) {
			n.recover(recovery.HolderGone{ID: id, Node: k, Why: fmt.Sprintf("pulling it from node %s failed: %v", n.rec.Name(k), err), Gone: serverGone(err)})
		}
		close(ch)
		n.unlock()
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
func (n *Node) adoptPulled(ctx context.Context, sid objstore.ID) bool {
	ctx, cancel := context.WithTimeout(ctx, pullWaitTimeout)
	defer cancel()
	if !objstore.WaitSealed(ctx, n.shared.Dir(), sid) {
		return false
	}
	_ = n.shared.Adopt(sid) // ErrExists: the driver's server adopted it meanwhile
	return n.shared.Contains(sid)
}

// pullWaitTimeout bounds the wait for another process's pull of an object.
const pullWaitTimeout = 2 * time.Minute

// refetchArgs prepares task p, which is to run again, when one of the
// shared arguments it was sent is lost (or always, with force): its
// arguments are claimed again (needArgs), so the lost ones are rebuilt
// first. It reports whether it took p over (p is then submitted once its
// arguments exist).
func (n *Node) refetchArgs(p *pending, force bool) bool {
	orig := p.lineage()
	if n.objects() == nil || orig == nil || orig == p.spec {
		return false
	}
	lost := force
	for _, a := range p.spec.Args {
		if a.Shared && !a.IsRef && !n.rec.HasRemote(a.Ref) && (n.shared == nil || !n.shared.Contains(storeID(a.Ref))) {
			lost = true
			break
		}
	}
	if !lost {
		return false
	}
	n.unpinTask(p)
	for _, a := range orig.Args {
		if _, ok := n.store.Get(a.Ref); a.IsRef && !ok {
			n.finishErr(p, &task.TaskError{Function: p.spec.Func, Message: fmt.Sprintf("argument %s was lost with its node and freed since; it cannot be rebuilt", a.Ref),
				Cause: task.Lost(a.Ref, task.ErrLostLineageDropped, "", nil)})
			return true
		}
	}
	p.spec.Args = append(p.spec.Args[:0], orig.Args...)
	p.failed, p.missing = nil, 0
	n.needArgs(p)
	if p.missing == 0 {
		n.ready(p)
	}
	return true
}

// retryPull runs task p again when its worker could not pull one of its
// arguments (its holder died or dropped it): the argument is rebuilt
// first if nobody holds it any more. It reports whether it did.
func (n *Node) retryPull(w *proc, p *pending, objs []task.Object) bool {
	o := n.objects()
	if o == nil || len(objs) == 0 || objs[0].Err == nil || p.spec.Kind != task.KindFunc {
		return false
	}
	id, ok := transfer.FailedPull(objs[0].Err)
	if !ok {
		return false
	}
	why := fmt.Sprintf("%s could not pull it: %s", w.name, firstLine(objs[0].Err.Message))
	local := n.shared != nil && n.shared.Contains(storeID(id))
	for _, e := range n.recover(recovery.PullFailed[*pending]{Task: p, ID: id, Why: why, Local: local}) {
		if e.Kind == recovery.Rerun {
			return true // run again (with the holder it pulled from dropped)
		}
	}
	return false // tried too often: its failure stands
}

// localityBytes is the least size of a task's arguments on one node that
// makes the task prefer that node.
const localityBytes = 1 << 20

// submitNear hands task p to the scheduling core, preferring the node that
// holds the most bytes of its shared arguments (at least localityBytes)
// when that node has room (sched.Cluster.SubmitNear).
func (n *Node) submitNear(p *pending, pipelined bool) {
	if k, ok := n.nearNode(p); ok {
		n.core.SubmitNear(p, &p.entry.Res, pipelined, k)
		return
	}
	if depth := n.packDepth(p.entry); pipelined && depth > 0 {
		n.core.SubmitPacked(p, &p.entry.Res, depth)
		return
	}
	n.core.Submit(p, &p.entry.Res, pipelined)
}

// nearNode returns the node holding the most bytes of p's shared
// arguments, if they are localityBytes or more.
func (n *Node) nearNode(p *pending) (sched.NodeID, bool) {
	o := n.objects()
	if o == nil || n.shared == nil {
		return 0, false
	}
	var bytes map[sched.NodeID]int64
	for _, a := range p.spec.Args {
		if !a.IsRef {
			continue
		}
		obj, ok := n.store.Get(a.Ref)
		if !ok || !obj.Shared || obj.Err != nil || obj.Size < localityBytes/16 {
			continue
		}
		if bytes == nil {
			bytes = map[sched.NodeID]int64{}
		}
		if n.shared.Contains(storeID(a.Ref)) {
			bytes[sched.Local] += obj.Size
			continue
		}
		for _, k := range n.rec.Holders(a.Ref) {
			bytes[k] += obj.Size
		}
	}
	best, most := sched.NodeID(0), int64(localityBytes-1)
	found := false
	for k, b := range bytes {
		if b > most || (b == most && found && k < best) {
			best, most, found = k, b, true
		}
	}
	return best, found
}
