package driver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/gray-ml/gray/runtime/cluster"
	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/node"
	graysession "github.com/gray-ml/gray/runtime/session"
	"github.com/gray-ml/gray/runtime/task"
)

// clusterConn is a driver's connection to a cluster: the control store
// (nodes, jobs) and its leases on the nodes.
type clusterConn struct {
	redis  *control.Redis
	rec    *control.Recorder // the driver node's control store: records its work in Redis
	drv    *cluster.Driver
	self   string // the node on the driver's machine, scheduled by the driver's node; "" if none
	cancel context.CancelFunc
	done   chan struct{} // closed when publish ends
}

// dialCluster connects to the cluster opts name (Config.Address or
// GRAY_ADDRESS; none: nil, the single-machine runtime) and readies cfg for
// it: the driver's node listens for leased workers on the address it
// reaches the cluster from, and schedules the node on its own machine
// itself (with that node's resources unless the Config set the CPUs).
func dialCluster(ctx context.Context, opts Config, cfg *node.Config) (*clusterConn, error) {
	addr, tok, err := graysession.Resolve(opts.Address, opts.Token)
	if err != nil {
		return nil, fmt.Errorf("gray: Init: %w", err)
	}
	if addr == "" {
		return nil, nil
	}
	if tok == "" {
		return nil, fmt.Errorf("gray: Init: cluster %s needs its token: set Options.Token or %s (gray start --head printed it)", addr, graysession.EnvToken)
	}
	ip, err := localIP(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("gray: Init: reaching cluster %s: %w", addr, err)
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	job := hex.EncodeToString(rnd[:])
	r, err := control.DialRedis(ctx, control.RedisConfig{Addr: addr, Password: tok}, job)
	if err != nil {
		return nil, fmt.Errorf("gray: Init: connecting to cluster %s: %w", addr, err)
	}
	nodes, err := r.Nodes(ctx)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("gray: Init: listing the nodes of cluster %s: %w", addr, err)
	}
	c := &clusterConn{redis: r}
	var self control.NodeInfo
	for _, n := range nodes {
		if n.Alive && n.IP == ip {
			c.self, self = n.ID, n
			if opts.NumCPUs == 0 {
				cfg.Resources.CPU = n.Resources.CPU
			}
			if opts.NumGPUs == 0 {
				cfg.Resources.GPU = n.Resources.GPU
			}
			if opts.Resources == nil {
				cfg.Resources.Custom = n.Resources.Custom
			}
			cfg.Env = append(cfg.Env, cluster.EnvNodeID+"="+n.ID)
			break
		}
	}
	host, _ := os.Hostname()
	_ = r.RegisterJob(ctx, control.JobInfo{ID: job, Driver: fmt.Sprintf("%s pid %d", host, os.Getpid()), Node: c.self, Started: time.Now()})
	idle, err := idleReturn()
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("gray: Init: %w", err)
	}
	c.drv, err = cluster.NewDriver(cluster.DriverConfig{Token: []byte(tok), Job: job, Args: cfg.Args, Skip: c.self, Listen: ip,
		IdleReturn: idle})
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("gray: Init: %w", err)
	}
	var localCap *task.Resources
	var localGPUs []int
	if c.self != "" {
		// The node of this machine counts what the driver's own workers
		// may use, so that drivers sharing it never oversubscribe it.
		// The grant there follows demand (runtime/cluster/grant.go): it
		// starts with what the node has free and grows up to capacity
		// (what the options allow) while other jobs leave room.
		capacity := cfg.Resources
		granted, gpus, err := c.drv.LeaseLocal(ctx, self, capacity)
		if err != nil {
			c.drv.Close()
			r.Close()
			if self.Head {
				return nil, fmt.Errorf("gray: Init: the head node %s on this machine does not answer (its daemon died?): %w; %s", c.self, err, cluster.HeadRestartHint)
			}
			return nil, fmt.Errorf("gray: Init: leasing the resources of node %s on this machine: %w (is its daemon running? `gray start --address ...` starts it again)", c.self, err)
		}
		if msg := leaseShortfall(c.self, self.Resources, cfg.Resources, granted); msg != "" {
			fmt.Fprintln(os.Stderr, msg)
		}
		cfg.Resources = granted
		localCap, localGPUs = &capacity, gpus
	}
	if c.rec = newRecorder(ctx, r, c.self, host); c.rec != nil {
		cfg.Control, cfg.Starts = c.rec, c.rec
	}
	cfg.Cluster = &cluster.DriverNode{Remote: c.drv, Objects: c.drv, Token: []byte(tok), Listen: net.JoinHostPort(ip, "0"), Locations: r,
		LocalCapacity: localCap, LocalGPUs: localGPUs}
	return c, nil
}

// EnvIdleReturn, when set (a duration: "1s", "250ms"), is how long a
// cluster driver keeps resources granted on a node unused before it gives
// them back for other drivers (default cluster.DefaultIdleReturn).
const EnvIdleReturn = "GRAY_IDLE_RETURN"

func idleReturn() (time.Duration, error) {
	v := os.Getenv(EnvIdleReturn)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive duration such as 1s or 250ms", EnvIdleReturn, v)
	}
	return d, nil
}

// leaseShortfall explains a local lease smaller than asked for ("" when
// it is not): the node may have fewer CPUs or GPUs than the job asked
// for, or other jobs may hold part of it.
func leaseShortfall(node string, has, asked, granted task.Resources) string {
	if granted.CPU >= asked.CPU && granted.GPU >= asked.GPU {
		return ""
	}
	if has.CPU < asked.CPU || has.GPU < asked.GPU {
		if granted.CPU >= has.CPU && granted.GPU >= has.GPU {
			return fmt.Sprintf("gray: node %s on this machine has %s, less than the %s asked for (NumCPUs, NumGPUs): this job runs %s there, and more on other nodes when they are free",
				node, has, asked, granted)
		}
	}
	return fmt.Sprintf("gray: other jobs hold part of node %s on this machine: this job runs %s there", node, granted)
}

// localIP returns the IP address this machine reaches addr from.
func localIP(ctx context.Context, addr string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	host, _, err := net.SplitHostPort(c.LocalAddr().String())
	return host, err
}

// start joins the cluster's nodes for n and follows them.
func (c *clusterConn) start(ctx context.Context, n *node.Node) error {
	c.drv.Attach(n)
	wctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	stop := context.AfterFunc(ctx, cancel) // Init's ctx bounds the first joins
	err := c.drv.Watch(wctx, c.redis)
	stop()
	if err != nil {
		cancel()
		return fmt.Errorf("gray: Init: %w", err)
	}
	c.done = make(chan struct{})
	go c.publish(wctx, n)
	return nil
}

// publishEvery is how often the driver publishes its job's load (what it
// runs where, what waits for a node) for `gray status`: off the task path,
// one queued Redis write at most per period.
const publishEvery = 500 * time.Millisecond

// publish records the job's load in the control store until ctx ends:
// when it changed, and at least every LoadTTL/2 so that it does not
// expire while the driver lives.
func (c *clusterConn) publish(ctx context.Context, n *node.Node) {
	defer close(c.done)
	tick := time.NewTicker(publishEvery)
	defer tick.Stop()
	var last control.JobLoad
	var sent time.Time
	var stalled string
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		stalled = reportStall(n, stalled)
		l := jobLoad(n, c.self)
		if time.Since(sent) < control.LoadTTL/2 && sameLoad(l, last) {
			continue
		}
		l.Updated = time.Now()
		if c.redis.PublishLoad(l) == nil {
			last, sent = l, time.Now()
		}
	}
}

// jobLoad is what the driver's scheduler runs where now.
func jobLoad(n *node.Node, self string) control.JobLoad {
	var l control.JobLoad
	for _, a := range n.Accounts(self) {
		if a.Name == "" {
			continue // the driver's machine runs no node of the cluster
		}
		used := subResources(a.Total, a.Available)
		l.Nodes = append(l.Nodes, control.JobNodeLoad{Node: a.Name, Granted: a.Total, Used: used, Tasks: a.Tasks, Actors: a.Actors})
	}
	st, stalled := n.Stalled()
	l.Waiting = waitingLoad(n.Waiting(), st.Need, stalled)
	return l
}

// waitingLoad is what a job publishes as waiting: the requests no node
// can hold (cannot), and what its stalled actors lack (stall) beyond
// them. An actor that no live node can hold is in both, and gray status
// listed it twice.
func waitingLoad(cannot []task.Resources, stall task.Resources, stalled bool) []task.Resources {
	if !stalled {
		return cannot
	}
	var sum task.Resources
	for _, w := range cannot {
		sum = sum.Add(w)
	}
	if rest := stall.Sub(sum).NonNegative(); !rest.IsZero() {
		return append(cannot, rest)
	}
	return cannot
}

// reportStall prints, once each time it changes, the line that says what
// the job's actors wait for when only a node joining or an actor ending
// can start them (a node died with every CPU in use: the run waits, and
// says so, rather than hang in silence). last is the line printed before;
// it returns the line now ("" when nothing waits so).
func reportStall(n *node.Node, last string) string {
	st, ok := n.Stalled()
	if !ok {
		return ""
	}
	line := st.String()
	if line != last {
		fmt.Fprintln(os.Stderr, "gray: "+line)
	}
	return line
}

func sameLoad(a, b control.JobLoad) bool {
	a.Updated, b.Updated = time.Time{}, time.Time{}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// close ends the leases and the control store's connection.
func (c *clusterConn) close() {
	if c.cancel != nil {
		c.cancel()
		if c.done != nil {
			<-c.done
		}
	}
	c.drv.Close()
	if c.rec != nil {
		_ = c.rec.Close() // its last writes and counts, before the job ends
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), time.Second)
	_ = c.redis.EndJob(stopCtx, c.redis.Job())
	cancel()
	c.redis.Close()
}

// subResources returns a - b.
func subResources(a, b task.Resources) task.Resources {
	d := task.Resources{CPU: a.CPU - b.CPU, GPU: a.GPU - b.GPU}
	for k, v := range a.Custom {
		if d.Custom == nil {
			d.Custom = map[string]float64{}
		}
		d.Custom[k] = v - b.Custom[k]
	}
	return d
}
