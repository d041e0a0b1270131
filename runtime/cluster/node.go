package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/machine"
	"github.com/gray-ml/gray/runtime/monitor"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/transfer"
	"github.com/gray-ml/gray/runtime/wire"
)

// EnvNodeID names, in a worker's environment, the node that runs it.
const EnvNodeID = "GRAY_NODE_ID"

// NodeConfig configures a node daemon.
type NodeConfig struct {
	ID, IP    string
	Port      int    // where drivers lease workers; 0 picks a free port
	TempDir   string // the executable cache and the workers' logs live under it
	Resources task.Resources
	Token     []byte
	Redis     control.RedisConfig
	// ObjectStoreMemory is the capacity of the node's shared-memory object
	// store (0: objstore.DefaultCapacity), which holds the large results
	// and Puts of the workers it starts and the arguments they pull.
	ObjectStoreMemory int64
	Head              bool
	HeartbeatInterval time.Duration // 0: monitor.DefaultInterval
	// HeadTimeout is the head's silence after which this node (not the
	// head) declares it dead and says so (headwatch.go); 0:
	// monitor.DefaultTimeout.
	HeadTimeout time.Duration
	// MaxCache bounds the bytes of executables cached under TempDir
	// (least recently used evicted first, never one in use); 0:
	// DefaultMaxCache.
	MaxCache int64
	// Registry, when not nil, is used instead of dialling Redis.
	Registry monitor.NodeRegistry
	// Ready, when not nil, is called with the lease address once the node
	// listens.
	Ready func(addr string)
}

// ServeNode runs a node daemon until ctx ends: it listens for drivers'
// leases (token-authenticated), divides its resources among them as their
// demand changes (grant.go), starts their workers from their executable
// (pulled once, cached by its sha256 under TempDir: exe.go), registers
// the node in the control store and heartbeats. When ctx ends, or the
// cluster declares the node dead, every worker it started is killed.
func ServeNode(ctx context.Context, cfg NodeConfig) error {
	if cfg.ID == "" || cfg.TempDir == "" {
		return errors.New("cluster: a node needs an ID and a temp dir")
	}
	if len(cfg.Token) == 0 {
		return fmt.Errorf("cluster: node %s: no cluster token", cfg.ID)
	}
	ip := cfg.IP
	if ip == "" {
		ip = "127.0.0.1"
	}
	d := &daemon{cfg: cfg, books: newBooks(cfg.Resources), leases: map[*lease]bool{}, watchers: map[*wire.Conn]bool{},
		machine: machine.Sampler{Every: control.MachineSampleEvery},
		logs:    filepath.Join(cfg.TempDir, "logs")}
	if err := os.MkdirAll(d.logs, 0o700); err != nil {
		return fmt.Errorf("cluster: node %s: %w", cfg.ID, err)
	}
	exes, err := newExeCache(filepath.Join(cfg.TempDir, "exe"), cfg.Token, cfg.MaxCache)
	if err != nil {
		return fmt.Errorf("cluster: node %s: %w", cfg.ID, err)
	}
	defer exes.close()
	d.exes = exes
	ln, err := transfer.Listen(net.JoinHostPort(ip, strconv.Itoa(cfg.Port)), cfg.Token)
	if err != nil {
		return fmt.Errorf("cluster: node %s: %w", cfg.ID, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	if d.objs, err = startObjects(ctx, &wg, cfg, ip, exes.blobs); err != nil {
		ln.Close()
		return err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.accept(ctx, ln)
	}()
	defer func() {
		ln.Close()
		d.objs.ln.Close()
		d.closeAll()
		wg.Wait()
		d.objs.close()
	}()
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr().String())
	}
	reg := cfg.Registry
	if reg == nil {
		store, err := control.DialRedisRetry(ctx, cfg.Redis, "")
		if err != nil {
			return fmt.Errorf("cluster: node %s: %w", cfg.ID, err)
		}
		defer func() {
			stopCtx, stop := context.WithTimeout(context.Background(), 2*time.Second)
			defer stop()
			if err := store.MarkDead(stopCtx, cfg.ID, "stopped (gray stop)"); err != nil {
				log.Printf("gray: node %s: %v", cfg.ID, err)
			}
			store.Close()
		}()
		reg = store
		if !cfg.Head {
			hctx, stopWatch := context.WithCancel(ctx)
			watched := make(chan struct{})
			go func() {
				defer close(watched)
				watchHead(hctx, store, cfg)
			}()
			defer func() { // before the store closes
				stopWatch()
				<-watched
			}()
		}
	}
	hb := &monitor.Heartbeater{
		Store: reg,
		Node: control.NodeInfo{ID: cfg.ID, IP: ip, NodeAddr: ln.Addr().String(), ObjectAddr: d.objs.addr(), Head: cfg.Head,
			Resources: cfg.Resources, Load: control.NodeLoad{StoreCapacity: cfg.ObjectStoreMemory}},
		Load:     d.load,
		Interval: cfg.HeartbeatInterval,
	}
	return hb.Run(ctx)
}

// daemon is a running node.
type daemon struct {
	cfg  NodeConfig
	logs string
	objs *nodeObjects

	mu     sync.Mutex
	books  // what no lease holds (grant.go)
	leases map[*lease]bool
	// watchers are the other nodes' connections watching this head
	// (headwatch.go), ended with the daemon (nil once it ends).
	watchers map[*wire.Conn]bool
	nextN    uint64 // numbers the leases, oldest first (grant.go)
	exes     *exeCache
	// machine samples the CPU and memory use the heartbeats carry.
	machine machine.Sampler
}

// load is the node's load for its heartbeat.
func (d *daemon) load() control.NodeLoad {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.objs.store.Stats()
	l := control.NodeLoad{Used: d.cfg.Resources.Sub(d.free), StoreUsed: st.Used, StoreCapacity: st.Capacity,
		ObjectsServed: d.objs.srv.Served()}
	for ls := range d.leases {
		ls.mu.Lock()
		l.Workers += len(ls.workers)
		ls.mu.Unlock()
	}
	if smp, ok := d.machine.Sample(time.Now()); ok {
		l.Machine = &smp
	}
	return l
}

func (d *daemon) accept(ctx context.Context, ln net.Listener) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.serve(ctx, c)
		}()
	}
}

// closeAll ends every lease, killing its workers.
func (d *daemon) closeAll() {
	d.mu.Lock()
	ls := make([]*lease, 0, len(d.leases))
	for l := range d.leases {
		ls = append(ls, l)
	}
	for w := range d.watchers {
		w.Abort()
	}
	d.watchers = nil // none is taken any more
	d.mu.Unlock()
	for _, l := range ls {
		l.conn.Abort()
		l.killAll()
	}
}

// lease is one driver's connection and the workers it started.
type lease struct {
	d    *daemon
	conn *wire.Conn
	job  string
	exe  string
	// release ends the lease's use of its executable in the cache.
	release func()
	want    task.Resources // asked for in the hello

	// Under d.mu: its grant (grant.go), its number, and how many grants
	// were sent to it.
	share
	n, seq uint64

	mu      sync.Mutex
	workers map[uint64]*os.Process
	closed  bool
	wg      sync.WaitGroup
}

// serve runs one driver's lease until its connection ends.
func (d *daemon) serve(ctx context.Context, c net.Conn) {
	conn := wire.New(c)
	defer conn.Close()
	l := &lease{d: d, conn: conn, workers: map[uint64]*os.Process{}}
	typ, payload, err := conn.Recv()
	if err != nil {
		return
	}
	if typ == msgWatch {
		d.watched(ctx, conn) // headwatch.go
		return
	}
	if err := l.hello(ctx, typ, payload); err != nil {
		_ = conn.Send(msgWelcome, func(b []byte) []byte {
			b = append(b, 1)
			b = wire.AppendString(b, err.Error())
			return appendInts(appendRes(b, task.Resources{}), nil)
		})
		return
	}
	d.mu.Lock()
	granted, gpus := d.books.grant(&l.share, grant(l.want, d.free))
	l.desired = granted
	d.nextN++
	l.n = d.nextN
	d.leases[l] = true
	// The welcome goes out before any grant rebalancing sends.
	err = conn.Send(msgWelcome, func(b []byte) []byte {
		b = append(b, 0)
		b = wire.AppendString(b, d.cfg.ID)
		return appendInts(appendRes(b, granted), gpus)
	})
	d.mu.Unlock()
	defer func() {
		l.killAll()
		l.wg.Wait()
		if l.release != nil {
			l.release() // no worker runs its executable any more
		}
		d.mu.Lock()
		delete(d.leases, l)
		d.books.giveBack(&l.share, l.held, l.gpus)
		d.rebalanceLocked() // the others may grow into what it held
		d.mu.Unlock()
	}()
	if err != nil {
		return
	}
	go func() { // the lease ends with the daemon
		<-ctx.Done()
		conn.Abort()
	}()
	for {
		typ, payload, err := conn.Recv()
		if err != nil {
			return
		}
		dec := wire.Dec{B: payload}
		switch typ {
		case msgStart:
			id := dec.Uvarint()
			args, env := decodeStrings(&dec), decodeStrings(&dec)
			if dec.Err != nil {
				return
			}
			l.start(id, args, env)
		case msgStop:
			id := dec.Uvarint()
			if dec.Err != nil {
				return
			}
			l.mu.Lock()
			p := l.workers[id]
			l.mu.Unlock()
			if p != nil {
				_ = p.Kill()
			}
		case msgRelease:
			if d.objs.handleRelease(&dec) != nil {
				return
			}
		case msgWant:
			seq, desired := dec.Uvarint(), decodeRes(&dec)
			if dec.Err != nil {
				return
			}
			d.want(l, seq, desired)
		case msgReturn:
			r, gpus := decodeRes(&dec), decodeInts(&dec)
			if dec.Err != nil {
				return
			}
			d.giveBack(l, r, gpus)
		default:
			return
		}
	}
}

// hello reads the driver's hello (the connection's first message) and
// makes sure the node holds its executable (exe.go); the resources wanted
// are left in l.want.
func (l *lease) hello(ctx context.Context, typ byte, payload []byte) error {
	var err error
	if typ != msgHello {
		return fmt.Errorf("expected a hello, got message %d", typ)
	}
	dec := wire.Dec{B: payload}
	l.job = dec.String()
	goos, goarch := dec.String(), dec.String()
	var sum [32]byte
	dec.Fixed(sum[:])
	size := dec.Uvarint()
	l.want = decodeRes(&dec)
	sources := decodeStrings(&dec)
	if dec.Err != nil {
		return fmt.Errorf("malformed hello: %w", dec.Err)
	}
	if goos != runtime.GOOS || goarch != runtime.GOARCH {
		return fmt.Errorf("node %s runs %s/%s but the driver's executable is built for %s/%s: build the program for %s/%s (GOOS=%s GOARCH=%s go build), or use nodes of the driver's platform",
			l.d.cfg.ID, runtime.GOOS, runtime.GOARCH, goos, goarch, runtime.GOOS, runtime.GOARCH, runtime.GOOS, runtime.GOARCH)
	}
	if sum == ([32]byte{}) && size == 0 {
		// A resources-only lease: the driver runs on this node's machine
		// and starts its workers itself; the lease keeps other drivers
		// from counting the same resources.
		return nil
	}
	if l.exe, l.release, err = l.d.exes.use(ctx, sum, int64(size), sources); err != nil {
		return fmt.Errorf("node %s: %w", l.d.cfg.ID, err)
	}
	return nil
}

// start starts worker id; its end is reported to the driver.
func (l *lease) start(id uint64, args, env []string) {
	if l.exe == "" {
		l.exited(id, fmt.Errorf("node %s: a resources-only lease starts no workers", l.d.cfg.ID))
		return
	}
	cmd := exec.Command(l.exe, args...)
	cmd.Env = append(append(append(workerEnv(), EnvNodeID+"="+l.d.cfg.ID), l.d.objs.env()...), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	name := fmt.Sprintf("%s-worker-%d", safe(l.job), id)
	var files []io.Closer
	for _, suffix := range []string{"out", "err"} {
		f, err := os.OpenFile(filepath.Join(l.d.logs, name+"."+suffix), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			continue
		}
		files = append(files, f)
		if suffix == "out" {
			cmd.Stdout = f
		} else {
			cmd.Stderr = f
		}
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		closeAll(files)
		return
	}
	err := cmd.Start()
	if err == nil {
		l.workers[id] = cmd.Process
		l.wg.Add(1)
	}
	l.mu.Unlock()
	if err != nil {
		closeAll(files)
		l.exited(id, fmt.Errorf("node %s could not start the worker: %w", l.d.cfg.ID, err))
		return
	}
	go func() {
		defer l.wg.Done()
		err := cmd.Wait()
		closeAll(files)
		l.mu.Lock()
		delete(l.workers, id)
		l.mu.Unlock()
		if err == nil {
			err = errors.New("exited")
		}
		l.exited(id, err)
	}()
}

func (l *lease) exited(id uint64, why error) {
	_ = l.conn.Send(msgExited, func(b []byte) []byte {
		b = wire.AppendUvarint(b, id)
		return wire.AppendString(b, why.Error())
	})
}

// killAll kills the lease's workers; none start afterwards.
func (l *lease) killAll() {
	l.mu.Lock()
	l.closed = true
	ps := make([]*os.Process, 0, len(l.workers))
	for _, p := range l.workers {
		ps = append(ps, p)
	}
	l.mu.Unlock()
	for _, p := range ps {
		_ = p.Kill()
	}
}

func closeAll(cs []io.Closer) {
	for _, c := range cs {
		c.Close()
	}
}

// workerEnv is the daemon's environment less what would confuse a worker
// (a worker's or a driver's cluster settings).
func workerEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GRAY_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// safe keeps the characters of s that are fine in a file name.
func safe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') {
			return r
		}
		return '_'
	}, s)
}
