package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/gray-ml/gray/runtime/cluster"
	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/monitor"
	"github.com/gray-ml/gray/runtime/session"
	"github.com/spf13/cobra"
)

// newNode is the hidden `gray node` command: the node daemon that
// `gray start` runs in the background.
func newNode() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:    "node --session DIR",
		Short:  "Run a node daemon (started by `gray start`)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := session.Read(dir)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			ctx = stopWithOwner(ctx, os.Getenv(EnvOwnerPID))
			return runDaemon(ctx, s)
		},
	}
	cmd.Flags().StringVar(&dir, "session", "", "the node's temp dir, which holds its session file")
	_ = cmd.MarkFlagRequired("session")
	return cmd
}

// EnvOwnerPID, when set to a process ID, makes a node daemon stop (as on
// `gray stop`) once that process is gone. Test harnesses set it to the
// test binary's pid, so that a test killed by its timeout leaves no
// cluster behind.
const EnvOwnerPID = "GRAY_OWNER_PID"

// stopWithOwner returns a context that also ends when the owner process
// (a pid, as text; "" for none) has exited.
func stopWithOwner(ctx context.Context, owner string) context.Context {
	pid, err := strconv.Atoi(owner)
	if owner == "" || err != nil || pid <= 0 {
		return ctx
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		defer cancel()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for session.Alive(pid) {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
		log.Printf("the owner process %d is gone: stopping", pid)
	}()
	return ctx
}

// runDaemon runs a node until ctx ends: on the head also the cluster's
// redis-server (restarted should it exit) and the monitor.
func runDaemon(ctx context.Context, s *session.Session) error {
	log.SetPrefix(fmt.Sprintf("[node %s] ", s.NodeID))
	if err := s.WritePID(session.NodePIDFile, os.Getpid()); err != nil {
		return err
	}
	cfg, err := nodeConfigFrom(s)
	if err != nil {
		return err
	}
	var stopHead func()
	if s.Head {
		if stopHead, err = startHead(ctx, s); err != nil {
			return err
		}
		defer stopHead()
	}
	log.Printf("serving node %s on %s (cluster %s)", s.NodeID, s.NodeIP, s.Address)
	if err := serveNode(ctx, cfg); err != nil {
		if errors.Is(err, control.ErrNodeDead) {
			return fmt.Errorf("%w; this node stops (start it again with `gray start --address %s`)", err, s.Address)
		}
		return err
	}
	log.Printf("stopped")
	return nil
}

// startHead starts what only the head runs: redis-server, kept running,
// and the monitor. The returned func stops them, the monitor first.
func startHead(ctx context.Context, s *session.Session) (stop func(), err error) {
	if s.ExternalRedis { // a standby head: the cluster's Redis runs elsewhere
		return startMonitor(ctx, s, func() {})
	}
	_, portText, err := net.SplitHostPort(s.Address)
	if err != nil {
		return nil, fmt.Errorf("the session's address %q: %w", s.Address, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, fmt.Errorf("the session's address %q has no port", s.Address)
	}
	k := &redisKeeper{
		cfg:  control.ServerConfig{Port: port, Bind: s.NodeIP, Dir: filepath.Join(s.TempDir, "redis"), Password: s.Token},
		sess: s,
		done: make(chan struct{}),
	}
	if err := k.start(ctx); err != nil {
		return nil, err
	}
	kctx, cancelKeeper := context.WithCancel(context.Background())
	go k.keep(kctx)
	return startMonitor(ctx, s, func() {
		cancelKeeper()
		<-k.done
	})
}

// startMonitor starts the head's monitor on the cluster's Redis; the
// returned func stops it, then calls after.
func startMonitor(ctx context.Context, s *session.Session, after func()) (stop func(), err error) {
	store, err := control.DialRedisRetry(ctx, control.RedisConfig{Addr: s.Address, Password: s.Token}, "")
	if err != nil {
		after()
		return nil, err
	}
	// Drivers read the bounds of their task tables from Redis.
	if err := store.PutSettings(ctx, control.ClusterSettings{KeepEnded: s.KeepEnded, MaxTaskRecords: s.MaxTaskRecords}); err != nil {
		log.Printf("%v", err)
	}
	mctx, cancelMonitor := context.WithCancel(ctx)
	mdone := make(chan struct{})
	// A connection to every other node tells at once when its process
	// died; the heartbeat confirms it (runtime/cluster/links.go).
	interval := s.HeartbeatInterval
	if interval <= 0 {
		interval = monitor.DefaultInterval
	}
	links := cluster.NewLinks(mctx, store, []byte(s.Token), interval)
	m := &monitor.Monitor{
		Store:   store,
		Timeout: s.NodeTimeout,
		Watch: func(id string) bool {
			if id != s.NodeID {
				links.Follow(id)
			}
			return true
		},
		Unreachable: links.Unreachable,
		Confirm:     2 * interval,
		OnDeath:     func(id, reason string, _ time.Duration) { log.Printf("node %s declared dead: %s", id, reason) },
	}
	go func() {
		defer close(mdone)
		m.Run(mctx)
		links.Wait()
	}()
	pdone := make(chan struct{})
	go func() {
		defer close(pdone)
		prune(mctx, store, s.KeepEnded)
	}()
	return func() {
		cancelMonitor()
		<-mdone
		<-pdone
		store.Close()
		after()
	}, nil
}

// prune bounds the cluster's tables until ctx ends: dead nodes and ended
// jobs leave them once listed for keep (0: the default).
func prune(ctx context.Context, store *control.Redis, keep time.Duration) {
	if keep <= 0 {
		keep = control.DefaultKeepEnded
	}
	tick := time.NewTicker(min(max(keep/4, 100*time.Millisecond), 30*time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if st, err := store.Prune(ctx, keep); err != nil {
			if ctx.Err() == nil {
				log.Printf("pruning the cluster's tables: %v", err)
			}
		} else if st.Nodes+st.Jobs > 0 {
			log.Printf("dropped %d dead nodes and %d ended jobs listed for over %v", st.Nodes, st.Jobs, keep)
		} else if st.Tasks+st.Actors > 0 {
			log.Printf("dropped %d ended tasks and %d dead actors listed for over %v", st.Tasks, st.Actors, keep)
		}
	}
}

// redisKeeper runs the head's redis-server and starts it again (on the
// same append-only file) whenever it exits unasked.
type redisKeeper struct {
	cfg  control.ServerConfig
	sess *session.Session
	cur  *control.RedisServer // owned by keep once it runs
	done chan struct{}        // closed when keep returns, the server stopped
}

func (k *redisKeeper) start(ctx context.Context) error {
	srv, err := control.StartRedisServer(ctx, k.cfg)
	if err != nil {
		return err
	}
	k.cur = srv
	if err := k.sess.WritePID(session.RedisPIDFile, srv.Pid()); err != nil {
		log.Printf("%v", err)
	}
	log.Printf("redis-server (pid %d) serves %s", srv.Pid(), srv.Addr())
	return nil
}

// keep watches the server until ctx ends, then stops it.
func (k *redisKeeper) keep(ctx context.Context) {
	defer close(k.done)
	backoff := 50 * time.Millisecond
	for {
		if k.cur != nil {
			select {
			case <-ctx.Done():
				k.cur.Stop()
				return
			case <-k.cur.Done():
				log.Printf("redis-server exited unasked; starting it again")
				k.cur = nil
			}
		}
		if err := k.start(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Printf("restarting redis-server: %v", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
	}
}
