package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"

	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/transfer"
	"github.com/gray-ml/gray/runtime/wire"
)

// A node's objects. The daemon owns a shared-memory object store; the
// workers it starts for drivers map it (task.EnvStore), write their large
// results and Puts straight into it (objstore.CreateFile, sealed by the
// worker) and pull the arguments they lack into it from the node that has
// them (transfer.DirSink). The daemon never hears of those writes: its
// transfer server adopts an object the first time another node asks for it
// (transfer.AdoptingSource), and the driver that owns an object tells the
// daemon, over its lease, when the object is freed (msgRelease). Objects
// stay where they were made until someone pulls them.

// nodeObjects is the daemon's store and the transfer server of its objects.
type nodeObjects struct {
	store *objstore.Store
	srv   *transfer.Server
	ln    net.Listener
}

// startObjects opens the node's store (in shared memory, /dev/shm,
// removed when the daemon stops; CleanStale removes a killed daemon's) and
// starts serving its objects on ip (token-checked), and its cached
// executables (blobs: other nodes pull a driver's from here). The server
// runs until ctx ends; close releases the store.
func startObjects(ctx context.Context, wg *sync.WaitGroup, cfg NodeConfig, ip string, blobs *transfer.Blobs) (*nodeObjects, error) {
	_, _ = objstore.CleanStale("/dev/shm") // stores of killed daemons and drivers
	st, err := objstore.Open(objstore.Options{
		Session:  "node-" + safe(cfg.ID) + "-" + strconv.Itoa(os.Getpid()),
		Capacity: cfg.ObjectStoreMemory,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: node %s: opening its object store: %w", cfg.ID, err)
	}
	ln, err := transfer.Listen(net.JoinHostPort(ip, "0"), cfg.Token)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("cluster: node %s: listening for object transfers: %w", cfg.ID, err)
	}
	o := &nodeObjects{store: st, srv: transfer.NewServer(transfer.Chain(transfer.AdoptingSource(st), blobs)), ln: ln}
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = o.srv.Serve(ctx, ln)
	}()
	return o, nil
}

// addr is where other nodes and drivers fetch this node's objects.
func (o *nodeObjects) addr() string { return o.ln.Addr().String() }

// env is what a worker of this node needs to map its store.
func (o *nodeObjects) env() []string {
	return []string{task.EnvStore + "=" + o.store.Dir(), task.EnvCap + "=" + strconv.FormatInt(o.store.Capacity(), 10)}
}

// release frees objects their driver freed: adopted ones through the
// store (at once, or when the last transfer of them ends), files no one
// asked for yet by removing them (a worker mapping one keeps its pages).
func (o *nodeObjects) release(hexIDs []string) {
	for _, h := range hexIDs {
		id := objstore.ID(h)
		if err := o.store.Release(id); err == nil || !errors.Is(err, objstore.ErrNotFound) {
			continue
		}
		_ = os.Remove(objstore.Path(o.store.Dir(), id))
	}
}

// close stops serving (the server's context ends with the daemon's) and
// removes the store.
func (o *nodeObjects) close() {
	o.ln.Close()
	o.store.Close()
}

// handleRelease decodes a msgRelease: object IDs, hex.
func (o *nodeObjects) handleRelease(dec *wire.Dec) error {
	ids := decodeStrings(dec)
	if dec.Err != nil {
		return dec.Err
	}
	o.release(ids)
	return nil
}
