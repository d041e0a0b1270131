package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/transfer"
	"github.com/gray-ml/gray/runtime/wire"
)

// Objects on a cluster. A worker maps its node's store (task.EnvStore):
// the driver's for its own workers, the node daemon's for workers another
// node started. Before sending a task or a Get reply that names a shared
// object this node may lack, the driver sends MsgLocate: where to pull it
// from. The worker pulls it into its node's store (transfer.DirSink: the
// bytes written from the socket through the shared-memory file, whose
// pages the kernel allocates as it fills them; concurrent pulls of one
// object in this process are merged by the transfer client, which needs
// the one sink of the worker), then maps it like any local object. A worker on another node than the driver
// writes its large results and Puts straight into its node's store
// (objstore.CreateFile): they stay there until someone pulls them.

// locate records where the objects of a MsgLocate can be pulled from.
func (w *Worker) locate(payload []byte) {
	d := wire.Dec{B: payload}
	n := d.Count()
	w.locMu.Lock()
	defer w.locMu.Unlock()
	if w.locs == nil {
		w.locs = map[ids.ObjectID]string{}
	}
	for range n {
		var id ids.ObjectID
		d.Fixed(id[:])
		addr := d.String()
		if d.Err != nil {
			return
		}
		w.locs[id] = addr
	}
}

// pullTimeout bounds one pull, and the wait for another process of this
// node pulling the same object.
const pullTimeout = 2 * time.Minute

// ensureLocal pulls object id into the node's store if the driver said
// where it is and the store lacks it. Its error is a transfer.PullError.
func (w *Worker) ensureLocal(id ids.ObjectID) error {
	w.locMu.Lock()
	addr, ok := w.locs[id]
	delete(w.locs, id)
	w.locMu.Unlock()
	if !ok || w.dir == "" {
		return nil
	}
	sid := objstore.ID(id.String())
	path := objstore.Path(w.dir, sid)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	c, sink, err := w.pullClient()
	if err != nil {
		return transfer.PullError(id, addr, err)
	}
	ctx, cancel := context.WithTimeout(w.ctx, pullTimeout)
	defer cancel()
	err = c.Fetch(ctx, addr, transfer.ObjectKey(id), sink)
	if err == nil {
		return nil
	}
	// Another process of this node (a worker, or the driver) may be
	// pulling or have pulled it: wait for its file.
	if objstore.WaitSealed(ctx, w.dir, sid) {
		return nil
	}
	return transfer.PullError(id, addr, err)
}

// pullClient returns the worker's transfer client, made at its first pull
// with the cluster token of its environment, and its sink into the node's
// store (the same sink for every pull, so that concurrent pulls of one
// object share one transfer).
func (w *Worker) pullClient() (*transfer.Client, transfer.Sink, error) {
	w.locMu.Lock()
	defer w.locMu.Unlock()
	if w.pull != nil {
		return w.pull, w.sink, nil
	}
	tok, err := clusterToken("to pull objects with")
	if err != nil {
		return nil, nil, err
	}
	w.pull, w.sink = transfer.NewClient(tok), transfer.DirSink(w.dir)
	return w.pull, w.sink, nil
}

// writeFile writes a large result or Put of a worker on another node than
// the driver into its node's store, where it stays until pulled.
func (w *Worker) writeFile(id ids.ObjectID, size int, encode func([]byte) error) error {
	if w.cap > 0 && int64(size) > w.cap {
		return fmt.Errorf("object %s is %d bytes but its node's object store holds %d; start the node with a larger --object-store-memory or send a smaller object: %w", id, size, w.cap, objstore.ErrTooLarge)
	}
	f, err := objstore.CreateFile(w.dir, objstore.ID(id.String()), int64(size))
	if errors.Is(err, objstore.ErrExists) {
		return nil // a rebuild of a task whose result survived here
	}
	if err != nil {
		return err
	}
	if err := encode(f.Bytes()); err != nil {
		_ = f.Abort()
		return err
	}
	return f.Seal()
}
