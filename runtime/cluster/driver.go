package cluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/transfer"
	"github.com/gray-ml/gray/runtime/wire"
)

// Scheduler is what a Driver tells about the cluster's nodes: the driver's
// node (runtime/node.Node implements it).
type Scheduler interface {
	// AddNodeGrant adds node k, whose resources are capacity, of which
	// the job holds granted for now.
	// gpus are the indices of granted's GPUs (the node owns them).
	AddNodeGrant(k sched.NodeID, name string, granted task.Resources, gpus []int, capacity task.Resources) error
	NodeGone(k sched.NodeID, why string)
	WorkerExited(w sched.WorkerID, why error)
	// GrantView, GrowGrant and ReclaimGrant follow node k's grant
	// (sched.GrantView; grant.go): k is sched.Local for the lease on the
	// driver's own machine.
	GrantView(k sched.NodeID) (sched.GrantView, bool)
	GrowGrant(k sched.NodeID, r task.Resources, gpus []int)
	ReclaimGrant(k sched.NodeID, r task.Resources)
}

// Defaults of DriverConfig.
const (
	DefaultGrantEvery = 50 * time.Millisecond
	DefaultIdleReturn = time.Second
)

// DriverConfig configures a Driver.
type DriverConfig struct {
	Token []byte
	Job   string // the job's ID, in the nodes' worker log names
	// Executable is the program workers run (default: this one), started
	// with Args.
	Executable string
	Args       []string
	// Skip is the ID of a node not to lease: the one on the driver's own
	// machine, whose resources the driver's node schedules itself.
	Skip string
	// GrantEvery is how often the driver looks at its grants (asks for
	// more, gives back what idles); 0: DefaultGrantEvery.
	GrantEvery time.Duration
	// IdleReturn is how long resources stay granted and unused before
	// the driver gives them back; 0: DefaultIdleReturn.
	IdleReturn time.Duration
	// Listen is the host the driver serves its executable on, for the
	// nodes to pull (exe.go); "": 127.0.0.1.
	Listen string
}

// Driver is a driver's side of its leases: it implements Remote for
// the driver's node, joining the cluster's nodes as they appear.
type Driver struct {
	cfg  DriverConfig
	sum  [32]byte
	size int64

	mu     sync.Mutex
	sched  Scheduler
	leases map[sched.NodeID]*dlease
	local  *dlease // the resources-only lease on the driver's own node (LeaseLocal)
	byID   map[string]sched.NodeID
	next   sched.NodeID
	closed bool
	stop   chan struct{} // closed by Close: ends the grant loop
	exe    *exeServer    // serves the executable; started by the first lease that needs it
	wg     sync.WaitGroup
}

// dlease is the driver's end of one lease.
type dlease struct {
	k    sched.NodeID
	id   string // the node's ID
	head bool   // the node is the cluster's head
	conn *wire.Conn
	// objAddr is the node's object transfer address (driver_objects.go).
	objAddr string
	// seq is the number of the last grant applied (set by read).
	seq atomic.Uint64
	// The grant loop's own (grant.go): what it last asked for, and what
	// has idled.
	sentSeq     uint64
	sentDesired task.Resources
	asked       bool
	idle        idleTracker
}

// NewDriver hashes the executable the nodes will run.
func NewDriver(cfg DriverConfig) (*Driver, error) {
	if cfg.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("cluster: finding the program's executable: %w", err)
		}
		cfg.Executable = exe
	}
	f, err := os.Open(cfg.Executable)
	if err != nil {
		return nil, fmt.Errorf("cluster: reading the executable the nodes will run: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return nil, fmt.Errorf("cluster: hashing %s: %w", cfg.Executable, err)
	}
	if cfg.GrantEvery <= 0 {
		cfg.GrantEvery = DefaultGrantEvery
	}
	if cfg.IdleReturn <= 0 {
		cfg.IdleReturn = DefaultIdleReturn
	}
	d := &Driver{cfg: cfg, size: size, leases: map[sched.NodeID]*dlease{}, byID: map[string]sched.NodeID{},
		stop: make(chan struct{})}
	h.Sum(d.sum[:0])
	return d, nil
}

// Attach sets the scheduler the driver reports to and starts following
// the grants (grant.go); call it once, before Join.
func (d *Driver) Attach(s Scheduler) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sched = s
	if d.closed {
		return
	}
	if d.local != nil {
		d.wg.Add(1)
		go d.read(d.local)
	}
	d.wg.Add(1)
	go d.grantLoop()
}

// Join leases the node n describes (its lease address, NodeAddr): the node
// pulls the executable unless it has it cached (exe.go), grants what it
// has free, and the scheduler gets the node, its grant following demand
// from then on (grant.go). Joining a node twice does nothing.
func (d *Driver) Join(ctx context.Context, n control.NodeInfo) error {
	d.mu.Lock()
	if _, dup := d.byID[n.ID]; dup || d.closed || n.ID == d.cfg.Skip {
		d.mu.Unlock()
		return nil
	}
	d.next++
	k := d.next
	d.byID[n.ID] = k
	s := d.sched
	d.mu.Unlock()
	l, granted, gpus, err := d.dial(ctx, k, n)
	if err != nil {
		d.mu.Lock()
		delete(d.byID, n.ID)
		d.mu.Unlock()
		return err
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		l.conn.Close()
		return nil
	}
	d.leases[k] = l
	d.wg.Add(1)
	d.mu.Unlock()
	// The scheduler has the node before the lease is read: a grant that
	// follows the welcome at once must find its core, or the driver and
	// the node would disagree on what the job holds there.
	err = s.AddNodeGrant(k, n.ID, granted, gpus, n.Resources)
	go d.read(l)
	if err != nil {
		l.conn.Abort()
		return err
	}
	return nil
}

// LeaseLocal takes a resources-only lease on n, the node on the driver's
// own machine, whose workers the driver starts itself: the node counts
// what it grants (at first what it has free, at most want) as used by
// this job, so drivers sharing the node never oversubscribe it. It returns
// the first grant, which the driver's node must not exceed, and the
// indices of its GPUs, the only ones the driver's node may hand out; from
// Attach on the grant follows demand (grant.go) as sched.Local's, and the
// driver ending or dying returns it.
func (d *Driver) LeaseLocal(ctx context.Context, n control.NodeInfo, want task.Resources) (task.Resources, []int, error) {
	l, granted, gpus, err := d.hello(ctx, 0, n, want, false)
	if err != nil {
		return task.Resources{}, nil, err
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		l.conn.Close()
		return task.Resources{}, nil, errors.New("cluster: the driver is closed")
	}
	d.local = l
	d.mu.Unlock()
	return granted, gpus, nil
}

// dial opens the lease and says hello.
func (d *Driver) dial(ctx context.Context, k sched.NodeID, n control.NodeInfo) (*dlease, task.Resources, []int, error) {
	return d.hello(ctx, k, n, n.Resources, true)
}

// hello opens a lease on n asking for want; withExe offers the
// executable (a lease whose workers the node starts). It returns the
// lease, the first grant and the indices of its GPUs.
func (d *Driver) hello(ctx context.Context, k sched.NodeID, n control.NodeInfo, want task.Resources, withExe bool) (*dlease, task.Resources, []int, error) {
	if n.NodeAddr == "" {
		return nil, task.Resources{}, nil, fmt.Errorf("cluster: node %s has no lease address", n.ID)
	}
	c, err := transfer.Dial(ctx, n.NodeAddr, d.cfg.Token)
	if err != nil {
		return nil, task.Resources{}, nil, fmt.Errorf("cluster: joining node %s: %w", n.ID, err)
	}
	conn := wire.New(c)
	fail := func(err error) (*dlease, task.Resources, []int, error) {
		conn.Close()
		return nil, task.Resources{}, nil, fmt.Errorf("cluster: joining node %s at %s: %w", n.ID, n.NodeAddr, err)
	}
	var sources []string
	if withExe {
		if sources, err = d.exeSources(); err != nil {
			return fail(err)
		}
	}
	stop := context.AfterFunc(ctx, func() { conn.Abort() })
	defer stop()
	if err := conn.Send(msgHello, func(b []byte) []byte {
		b = wire.AppendString(b, d.cfg.Job)
		b = wire.AppendString(b, runtime.GOOS)
		b = wire.AppendString(b, runtime.GOARCH)
		if !withExe {
			var none [32]byte
			b = append(b, none[:]...)
			return appendStrings(appendRes(wire.AppendUvarint(b, 0), want), nil)
		}
		b = append(b, d.sum[:]...)
		b = wire.AppendUvarint(b, uint64(d.size))
		return appendStrings(appendRes(b, want), sources)
	}); err != nil {
		return fail(err)
	}
	typ, payload, err := conn.Recv()
	if err != nil {
		return fail(err)
	}
	if typ != msgWelcome {
		return fail(fmt.Errorf("expected a welcome, got message %d", typ))
	}
	dec := wire.Dec{B: payload}
	status, msg := dec.Byte(), dec.String()
	granted, gpus := decodeRes(&dec), decodeInts(&dec)
	if dec.Err != nil {
		return fail(dec.Err)
	}
	if status != 0 {
		return fail(errors.New(msg))
	}
	return &dlease{k: k, id: n.ID, head: n.Head, conn: conn, objAddr: n.ObjectAddr}, granted, gpus, nil
}

// read takes a lease's messages until its connection ends, which takes the
// node out of the job (the local lease's end leaves the driver's grant on
// its own node as it was).
func (d *Driver) read(l *dlease) {
	defer d.wg.Done()
	err := d.readLoop(l)
	l.conn.Close()
	d.mu.Lock()
	closed := d.closed
	if l.k != sched.Local {
		delete(d.leases, l.k)
		delete(d.byID, l.id)
	}
	d.mu.Unlock()
	if !closed && l.head {
		log.Printf("gray: the head node %s is gone (%v): this job goes on with the other nodes, but no node's death is detected and no driver can use the head's machine until a head runs again; %s", l.id, err, HeadRestartHint)
	}
	switch {
	case closed:
	case l.k == sched.Local:
		log.Printf("gray: lost the lease on node %s of this machine (%v): this job keeps what it holds there", l.id, err)
	default:
		d.sched.NodeGone(l.k, fmt.Sprintf("lost the connection to it: %v", err))
	}
}

func (d *Driver) readLoop(l *dlease) error {
	for {
		typ, payload, err := l.conn.Recv()
		if err != nil {
			return err
		}
		dec := wire.Dec{B: payload}
		switch typ {
		case msgExited:
			w, why := sched.WorkerID(dec.Uvarint()), dec.String()
			if dec.Err != nil {
				return dec.Err
			}
			d.sched.WorkerExited(w, errors.New(why))
		case msgGrant:
			seq, r, gpus := dec.Uvarint(), decodeRes(&dec), decodeInts(&dec)
			if dec.Err != nil {
				return dec.Err
			}
			d.sched.GrowGrant(l.k, r, gpus)
			// Seen only once applied: a want sent with it counts the grant.
			if seq > l.seq.Load() {
				l.seq.Store(seq)
			}
		case msgReclaim:
			r := decodeRes(&dec)
			if dec.Err != nil {
				return dec.Err
			}
			d.sched.ReclaimGrant(l.k, r)
		default:
			return fmt.Errorf("unexpected message %d", typ)
		}
	}
}

// NodeDied takes node id out of the job (the monitor declared it dead).
func (d *Driver) NodeDied(id, reason string) {
	d.mu.Lock()
	k, ok := d.byID[id]
	l := d.leases[k]
	d.mu.Unlock()
	if ok && l != nil {
		l.conn.Abort() // read reports it gone
	}
}

// StartWorker implements Remote.
func (d *Driver) StartWorker(k sched.NodeID, w sched.WorkerID, env []string) {
	d.mu.Lock()
	l := d.leases[k]
	d.mu.Unlock()
	if l == nil {
		go d.sched.WorkerExited(w, fmt.Errorf("node %d left the job", k))
		return
	}
	err := l.conn.Send(msgStart, func(b []byte) []byte {
		b = wire.AppendUvarint(b, uint64(w))
		b = appendStrings(b, d.cfg.Args)
		return appendStrings(b, env)
	})
	if err != nil {
		go d.sched.WorkerExited(w, fmt.Errorf("node %s: %w", l.id, err))
	}
}

// StopWorker implements Remote.
func (d *Driver) StopWorker(k sched.NodeID, w sched.WorkerID) {
	d.mu.Lock()
	l := d.leases[k]
	d.mu.Unlock()
	if l != nil {
		_ = l.conn.Send(msgStop, func(b []byte) []byte { return wire.AppendUvarint(b, uint64(w)) })
	}
}

// Watch joins the nodes alive in the control store now, then follows it:
// nodes that join are leased, nodes declared dead leave the job. It
// returns once the first nodes are joined; the following goes on until ctx
// ends.
func (d *Driver) Watch(ctx context.Context, store *control.Redis) error {
	events, err := store.WatchNodes(ctx)
	if err != nil {
		return fmt.Errorf("cluster: watching the nodes: %w", err)
	}
	nodes, err := store.Nodes(ctx)
	if err != nil {
		return fmt.Errorf("cluster: listing the nodes: %w", err)
	}
	for _, n := range nodes {
		if !n.Alive {
			continue
		}
		if err := d.Join(ctx, n); err != nil {
			log.Printf("gray: %v", err)
		}
	}
	d.mu.Lock()
	d.wg.Add(1)
	d.mu.Unlock()
	go func() {
		defer d.wg.Done()
		for ev := range events {
			switch ev.Kind {
			case control.NodeJoined:
				if err := d.Join(ctx, ev.Node); err != nil && ctx.Err() == nil {
					log.Printf("gray: %v", err)
				}
			case control.NodeDied:
				d.NodeDied(ev.Node.ID, ev.Reason)
			}
		}
	}()
	return nil
}

// Close ends every lease (the nodes kill the job's workers) and waits for
// the driver's goroutines; the context given to Watch must end too.
func (d *Driver) Close() error {
	d.mu.Lock()
	if !d.closed {
		close(d.stop)
	}
	d.closed = true
	ls := make([]*dlease, 0, len(d.leases))
	for _, l := range d.leases {
		ls = append(ls, l)
	}
	if d.local != nil {
		ls = append(ls, d.local)
		d.local = nil
	}
	d.mu.Unlock()
	for _, l := range ls {
		l.conn.Abort()
	}
	d.wg.Wait()
	d.mu.Lock()
	exe := d.exe
	d.mu.Unlock()
	if exe != nil {
		exe.close()
	}
	return nil
}
