package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gray-ml/gray/internal/owned"
	"github.com/gray-ml/gray/runtime/cluster"
	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/machine"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/session"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/spf13/cobra"
)

// startOptions are the flags of `gray start`.
type startOptions struct {
	head              bool
	address, token    string
	redisAddress      string
	tokenFile         string
	port, nodePort    int
	cpus, gpus        float64
	resources         string
	ip, tempDir       string
	block             bool
	objectStoreMemory int64
	maxCache          int64
	heartbeat         time.Duration
	nodeTimeout       time.Duration
	keepEnded         time.Duration
	maxTaskRecords    int
	readyTimeout      time.Duration
	// gpusSet: --num-gpus was given (else NVML's count is offered);
	// detectGPUs counts them (machine.ProbeGPUs; tests give a fake).
	gpusSet    bool
	detectGPUs func() (int, error)
}

func newStart() *cobra.Command {
	var o startOptions
	cmd := &cobra.Command{
		Use:   "start (--head | --address IP:PORT [--token-file FILE])",
		Short: "Start a cluster's head node, or a node that joins one",
		Long: "gray start --head starts a cluster on this machine: redis-server (the control\n" +
			"store, password-protected with the cluster token) and the head's node daemon.\n" +
			"It prints the command that joins another machine:\n\n" +
			"  gray start --address IP:PORT --token-file FILE\n\n" +
			"where FILE holds the cluster token (the head writes it, 0600, into its temp dir;\n" +
			"copy it, or set GRAY_TOKEN instead). On the head's machine neither is needed.\n\n" +
			"Nodes run in the background (unless --block) until `gray stop`. Several nodes\n" +
			"can run on one machine, each with its own --temp-dir (and --node-ip-address).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			o.gpusSet = cmd.Flags().Changed("num-gpus")
			tok, err := session.TokenFromFlags(o.token, o.tokenFile, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			o.token = tok
			return runStart(ctx, cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.head, "head", false, "start a new cluster: its Redis and head node")
	f.StringVar(&o.address, "address", "", "join the cluster whose head is at IP:PORT")
	f.StringVar(&o.redisAddress, "redis-address", "", "with --head: take over as the head of the running cluster whose Redis is at IP:PORT (a standby head; this machine starts no Redis)")
	f.StringVar(&o.tokenFile, "token-file", "", "a file holding the cluster token: the head's <temp-dir>/token, or a 0600 copy (default $GRAY_TOKEN, or found on the head's machine)")
	f.StringVar(&o.token, "token", "", "the cluster token itself (visible to every local user in ps: prefer --token-file or $GRAY_TOKEN)")
	f.IntVar(&o.port, "port", 6379, "the head's Redis port (0: any free port)")
	f.IntVar(&o.nodePort, "node-port", 0, "the port of the node's own server (0: any free port)")
	f.Float64Var(&o.cpus, "num-cpus", float64(runtime.NumCPU()), "CPUs this node offers")
	f.Float64Var(&o.gpus, "num-gpus", 0, "GPUs this node offers (default: the NVIDIA GPUs NVML finds; 0: none)")
	f.StringVar(&o.resources, "resources", "", `custom resources this node offers, as JSON: '{"Custom": 2}'`)
	f.StringVar(&o.ip, "node-ip-address", "127.0.0.1", "the address this node listens on and other machines reach it by")
	f.StringVar(&o.tempDir, "temp-dir", "", "the node's directory: session file, logs, Redis data (default /tmp/gray-<uid>/node-<id>)")
	f.BoolVar(&o.block, "block", false, "run in the foreground until interrupted")
	f.Int64Var(&o.objectStoreMemory, "object-store-memory", 0, "bytes of shared memory for the object store (0: the default)")
	f.Int64Var(&o.maxCache, "max-cache", cluster.DefaultMaxCache, "bytes of drivers' executables the node keeps cached in its temp dir: the least recently used go first, never one in use (0: the default)")
	f.DurationVar(&o.heartbeat, "heartbeat-interval", 0, "how often the node reports alive (0: 200ms)")
	f.DurationVar(&o.nodeTimeout, "node-timeout", 0, "silence after which a node is declared dead: by the head, or the head by the other nodes (0: 1.5s)")
	f.DurationVar(&o.keepEnded, "keep-ended", control.DefaultKeepEnded, "on the head: how long dead nodes, ended jobs (with their tasks), ended tasks and dead actors stay listed")
	f.IntVar(&o.maxTaskRecords, "max-task-records", control.DefaultMaxTaskRecords, "on the head: how many tasks each job keeps listed (gray list), its newest (0: the default)")
	f.DurationVar(&o.readyTimeout, "timeout", time.Minute, "how long to wait for the node to be up")
	return cmd
}

// nodeGPUs returns the GPUs the node offers: NVML's count, or --num-gpus
// when given (no more than NVML finds, where NVML is installed). A broken
// NVML (installed, failing) is an error naming the way out, never a crash:
// --num-gpus skips detection when it is 0.
func nodeGPUs(o startOptions) (float64, error) {
	if o.gpusSet && o.gpus == 0 {
		return 0, nil
	}
	detect := o.detectGPUs
	if detect == nil {
		detect = machine.ProbeGPUs
	}
	found, err := detect()
	switch {
	case errors.Is(err, machine.ErrNoNVML):
		return o.gpus, nil // no NVIDIA driver: nothing found, nothing to check against
	case err != nil && !o.gpusSet:
		return 0, fmt.Errorf("detecting GPUs: %v; or give --num-gpus N (0: none) to skip detection", err)
	case err == nil && !o.gpusSet:
		return float64(found), nil
	case err == nil && o.gpus > float64(found):
		return 0, fmt.Errorf("--num-gpus %g: NVML finds %d GPU(s) on this machine: give at most %d, or leave --num-gpus out", o.gpus, found, found)
	}
	return o.gpus, nil
}

// newSessionFrom checks the flags and builds the node's session. A head
// started again in the temp dir of one that died (its daemon killed, the
// machine rebooted) takes over that cluster: same node ID, address and
// token, so its nodes and drivers carry on; prev is then the old session.
func newSessionFrom(o startOptions) (s, prev *session.Session, err error) {
	switch {
	case o.head && o.address != "":
		return nil, nil, errors.New("give either --head (a new cluster) or --address (join one), not both")
	case o.redisAddress != "" && !o.head:
		return nil, nil, errors.New("--redis-address starts a standby head: give it with --head (nodes join with --address)")
	case !o.head && o.address == "":
		return nil, nil, errors.New("give --head to start a cluster, or --address IP:PORT --token-file FILE to join one")
	case net.ParseIP(o.ip) == nil:
		return nil, nil, fmt.Errorf("--node-ip-address %q is not an IP address", o.ip)
	case usableIP(o.ip) != nil:
		return nil, nil, usableIP(o.ip)
	case o.cpus < 0:
		return nil, nil, errors.New("--num-cpus must not be negative")
	case math.IsNaN(o.cpus) || math.IsInf(o.cpus, 0):
		return nil, nil, fmt.Errorf("--num-cpus %g: give a number of CPUs, 0 or more", o.cpus)
	case o.gpus < 0 || o.gpus != math.Trunc(o.gpus) || math.IsInf(o.gpus, 0):
		return nil, nil, fmt.Errorf("--num-gpus %g: give a whole number of GPUs, 0 or more (0: none), or leave it out to use those NVML finds", o.gpus)
	case o.port < 0 || o.port > 65535 || o.nodePort < 0 || o.nodePort > 65535:
		return nil, nil, errors.New("--port and --node-port must be TCP ports (0-65535)")
	case o.objectStoreMemory < 0:
		return nil, nil, errors.New("--object-store-memory must not be negative")
	case o.maxCache < 0:
		return nil, nil, fmt.Errorf("--max-cache %d: give the bytes of drivers' executables to keep cached (0 or leaving it out: %d)", o.maxCache, cluster.DefaultMaxCache)
	case o.keepEnded < 0:
		return nil, nil, errors.New("--keep-ended must not be negative")
	case o.maxTaskRecords < 0:
		return nil, nil, fmt.Errorf("--max-task-records %d: give how many tasks each job keeps listed (0 or leaving it out: %d)", o.maxTaskRecords, control.DefaultMaxTaskRecords)
	}
	gpus, err := nodeGPUs(o)
	if err != nil {
		return nil, nil, err
	}
	res := task.Resources{CPU: o.cpus, GPU: gpus}
	if o.resources != "" {
		if err := json.Unmarshal([]byte(o.resources), &res.Custom); err != nil {
			return nil, nil, fmt.Errorf(`--resources must be a JSON object of names to amounts, e.g. '{"Custom": 2}': %w`, err)
		}
		for name, v := range res.Custom {
			if name == "CPU" || name == "GPU" {
				return nil, nil, fmt.Errorf("--resources names %s: give it with --num-cpus / --num-gpus", name)
			}
			if v < 0 {
				return nil, nil, fmt.Errorf("--resources: %s is negative", name)
			}
		}
	}
	id, err := session.NewNodeID()
	if err != nil {
		return nil, nil, err
	}
	s = &session.Session{
		Head:              o.head,
		NodeID:            id,
		NodeIP:            o.ip,
		NodePort:          o.nodePort,
		Resources:         res,
		ObjectStoreMemory: o.objectStoreMemory,
		MaxCache:          o.maxCache,
		HeartbeatInterval: o.heartbeat,
		NodeTimeout:       o.nodeTimeout,
		KeepEnded:         o.keepEnded,
		MaxTaskRecords:    o.maxTaskRecords,
		Started:           time.Now(),
	}
	s.TempDir = o.tempDir
	if s.TempDir == "" {
		s.TempDir = filepath.Join(session.Base(), "node-"+id)
	}
	if s.TempDir, err = filepath.Abs(s.TempDir); err != nil {
		return nil, nil, fmt.Errorf("--temp-dir: %w", err)
	}
	old, err := session.Read(s.TempDir)
	if err == nil && old.Running() {
		return nil, nil, fmt.Errorf("a node (%s) runs in %s already: give each node its own --temp-dir", old.NodeID, s.TempDir)
	}
	if o.head && o.redisAddress != "" {
		// A standby head: the cluster's Redis runs elsewhere (kept with
		// persistence or replication: docs/cluster.md).
		if s.Address, s.Token, err = session.Resolve(o.redisAddress, o.token); err != nil {
			return nil, nil, err
		}
		s.ExternalRedis = true
		return s, nil, nil
	}
	if o.head && err == nil && old.Head {
		s.NodeID, s.NodeIP, s.Address, s.Token = old.NodeID, old.NodeIP, old.Address, old.Token
		return s, old, nil
	}
	if o.head {
		port := o.port
		if port == 0 {
			if port, err = freePort(o.ip); err != nil {
				return nil, nil, err
			}
		} else if err := portFree(o.ip, port); err != nil {
			return nil, nil, err
		}
		s.Address = net.JoinHostPort(o.ip, strconv.Itoa(port))
		if s.Token, err = session.NewToken(); err != nil {
			return nil, nil, err
		}
		return s, nil, nil
	}
	if s.Address, s.Token, err = session.Resolve(o.address, o.token); err != nil {
		return nil, nil, err
	}
	return s, nil, nil
}

func runStart(ctx context.Context, out io.Writer, o startOptions) error {
	s, prev, err := newSessionFrom(o)
	if err != nil {
		return err
	}
	// What killed drivers, trials and nodes of this machine left behind
	// (only what no live process owns): socket and trial folders, shared
	// memory.
	_, _ = owned.SweepTemp()
	_, _ = objstore.CleanStale("/dev/shm")
	if prev != nil {
		// The dead head's redis-server may still run: stop it (it writes
		// its append-only file) so the new head starts it again on it.
		if rpid := prev.PID(session.RedisPIDFile); session.Alive(rpid) && isRedis(rpid) {
			if err := terminate(rpid, 10*time.Second); err != nil {
				return fmt.Errorf("stopping the previous head's redis-server: %w", err)
			}
		}
	}
	if !s.Head || s.ExternalRedis {
		// Check the address and token now, rather than in the daemon's log.
		c, err := control.DialRedis(ctx, control.RedisConfig{Addr: s.Address, Password: s.Token}, "")
		if err != nil {
			return err
		}
		if s.ExternalRedis {
			err = refuseLiveHead(ctx, c, s.HeartbeatInterval)
		}
		c.Close()
		if err != nil {
			return err
		}
	}
	if err := s.Write(); err != nil {
		return err
	}
	logPath := filepath.Join(s.TempDir, "logs", "node.log")
	if err := session.MkdirPrivate(filepath.Dir(logPath)); err != nil {
		return err
	}
	if o.block {
		return runBlocking(ctx, out, s, o.readyTimeout)
	}
	d, err := spawnDaemon(s, logPath)
	if err != nil {
		s.Unindex()
		return err
	}
	if err := waitReady(ctx, s, d.exited, o.readyTimeout); err != nil {
		d.kill()
		s.Unindex()
		return fmt.Errorf("%w\n%s", err, logTail(logPath))
	}
	if prev != nil {
		fmt.Fprintf(out, "Took over the cluster of the previous head in %s.\n", s.TempDir)
	}
	printStarted(out, s, logPath)
	return nil
}

// runBlocking runs the node daemon in this process until interrupted.
func runBlocking(ctx context.Context, out io.Writer, s *session.Session, timeout time.Duration) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	defer s.Unindex()
	exited := make(chan error, 1)
	go func() { exited <- runDaemon(ctx, s) }()
	if err := waitReady(ctx, s, exited, timeout); err != nil {
		stop()
		return err
	}
	printStarted(out, s, "")
	return <-exited
}

// daemon is a node daemon started in the background.
type daemon struct {
	cmd    *exec.Cmd
	exited chan error    // receives the exit once
	done   chan struct{} // closed on exit
}

// spawnDaemon starts `gray node` in its own process group, its output
// going to logPath.
func spawnDaemon(s *session.Session, logPath string) (*daemon, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program to start the node daemon: %w", err)
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the node's log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(exe, "node", "--session", s.TempDir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = s.TempDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the node daemon: %w", err)
	}
	if err := s.WritePID(session.NodePIDFile, cmd.Process.Pid); err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return nil, err
	}
	d := &daemon{cmd: cmd, exited: make(chan error, 1), done: make(chan struct{})}
	go func() {
		d.exited <- cmd.Wait()
		close(d.done)
	}()
	return d, nil
}

// kill ends a daemon that failed to come up, with its process group.
func (d *daemon) kill() {
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	<-d.done
}

// waitReady waits until the node is registered alive in the cluster's
// node table, the daemon exits, or the timeout passes.
func waitReady(ctx context.Context, s *session.Session, exited <-chan error, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var store *control.Redis
	defer func() {
		if store != nil {
			store.Close()
		}
	}()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := errors.New("the cluster's Redis does not answer yet")
	for {
		if store == nil {
			c, err := control.DialRedis(ctx, control.RedisConfig{Addr: s.Address, Password: s.Token}, "")
			if errors.Is(err, control.ErrRedisAuth) {
				return err
			}
			store, last = c, err
		}
		if store != nil {
			n, ok, err := store.Node(ctx, s.NodeID)
			if err == nil && ok && n.Alive {
				return nil
			}
			last = fmt.Errorf("node %s has not registered yet", s.NodeID)
		}
		select {
		case err := <-exited:
			if err == nil {
				err = errors.New("it exited")
			}
			return fmt.Errorf("the node daemon stopped while starting: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("the node did not come up within %v: %v", timeout, last)
		case <-tick.C:
		}
	}
}

// logTail returns the end of a log file, for errors.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return "(the node's log " + path + " is empty)"
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return "the end of " + path + ":\n" + strings.TrimRight(string(b), "\n")
}

func printStarted(out io.Writer, s *session.Session, logPath string) {
	if s.Head {
		fmt.Fprintf(out, "Started a Gray cluster: head node %s, Redis at %s.\n", s.NodeID, s.Address)
		fmt.Fprintf(out, "The cluster token is in %s (0600; whoever holds it can run code on every node).\n", s.TokenPath())
		fmt.Fprintf(out, "To add a machine to it, copy that file there (keeping it 0600) and run there:\n\n")
		fmt.Fprintf(out, "gray start --address %s --token-file %s\n\n", s.Address, s.TokenPath())
		fmt.Fprintf(out, "(or set GRAY_TOKEN to the token in it). Drivers connect with GRAY_ADDRESS=%s and GRAY_TOKEN\n", s.Address)
		fmt.Fprintf(out, "or --token-file, or with Address \"auto\" on this machine.\n")
	} else {
		fmt.Fprintf(out, "Node %s joined the cluster at %s.\n", s.NodeID, s.Address)
	}
	if logPath != "" {
		fmt.Fprintf(out, "Its log: %s. Stop everything started here with `gray stop`.\n", logPath)
	}
}

// usableIP checks that ip can be the address other machines reach this
// node by: one address of this machine, not a wildcard ("every
// interface" would also expose Redis everywhere), multicast or broadcast.
func usableIP(ip string) error {
	a := net.ParseIP(ip)
	switch {
	case a.IsUnspecified():
		return fmt.Errorf("--node-ip-address %s means every interface, which other machines cannot dial and which would expose the node and Redis on all of them: give this machine's address on the cluster's network (e.g. 10.0.0.5), or 127.0.0.1 for one machine", ip)
	case a.IsMulticast() || a.Equal(net.IPv4bcast):
		return fmt.Errorf("--node-ip-address %s is a multicast or broadcast address: give this machine's address on the cluster's network", ip)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return fmt.Errorf("--node-ip-address %s is not an address of this machine (`ip addr` lists them): %w", ip, err)
	}
	return ln.Close()
}

// freePort returns a TCP port of ip that was free a moment ago.
func freePort(ip string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port on %s: %w", ip, err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// portFree checks that a port can be listened on.
func portFree(ip string, port int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("port %d on %s is taken (another cluster? `gray stop` it, or give --port): %w", port, ip, err)
	}
	return ln.Close()
}
