package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gray-ml/gray/runtime/transfer"
)

// Code on every node. A driver's workers run the driver's own executable.
// The driver serves it (transfer.FileBlob, on its exe server) under its
// SHA-256; its hello names the sum and where to pull it from: nodes that
// already run the job's workers (their object servers serve their cache
// too) and then the driver. A node keeps executables in a content-
// addressed cache (transfer.Blobs: checked against the sum before it is
// renamed into place, mode 0700), pulls what it lacks once however many
// leases want it at the same time, and starts workers from the cache.

// exePullTimeout bounds one pull of an executable.
const exePullTimeout = 5 * time.Minute

// exeCache is a node's cache of executables and its pulls in flight.
type exeCache struct {
	blobs  *transfer.Blobs
	client *transfer.Client

	mu      sync.Mutex
	pulls   map[[32]byte]*exePull
	pulled  int // pulls done, for tests
	max     int64
	inUse   map[[32]byte]int // leases running workers from each (exe_lru.go)
	evicted int              // executables evicted, for tests
}

type exePull struct {
	done chan struct{}
	err  error
}

// newExeCache opens the cache in dir, which keeps about limit bytes (0:
// DefaultMaxCache; exe_lru.go).
func newExeCache(dir string, token []byte, limit int64) (*exeCache, error) {
	b, err := transfer.NewBlobs(dir)
	if err != nil {
		return nil, err
	}
	return &exeCache{blobs: b, client: transfer.NewClient(token), pulls: map[[32]byte]*exePull{}, max: limit,
		inUse: map[[32]byte]int{}}, nil
}

func (c *exeCache) close() { c.client.Close() }

// ensure makes sure the cache holds the executable with this sum, pulling
// it from the first of sources that has it. Leases that want the same
// executable at once share one pull; a lease whose pull failed tries its
// own sources.
func (c *exeCache) ensure(ctx context.Context, sum [32]byte, size int64, sources []string) error {
	for {
		if c.blobs.Has(sum) {
			return nil
		}
		c.mu.Lock()
		p := c.pulls[sum]
		if p == nil {
			p = &exePull{done: make(chan struct{})}
			c.pulls[sum] = p
			c.mu.Unlock()
			p.err = c.pull(ctx, sum, size, sources)
			c.mu.Lock()
			delete(c.pulls, sum)
			c.pulled++
			c.mu.Unlock()
			close(p.done)
			return p.err
		}
		c.mu.Unlock()
		select {
		case <-p.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if p.err == nil {
			return nil
		}
	}
}

// pull fetches the executable from the first source that serves it.
func (c *exeCache) pull(ctx context.Context, sum [32]byte, size int64, sources []string) error {
	if len(sources) == 0 {
		return fmt.Errorf("the driver's executable (sha256 %x) is not cached here and the driver named no place to pull it from", sum)
	}
	ctx, cancel := context.WithTimeout(ctx, exePullTimeout)
	defer cancel()
	var errs []error
	for _, addr := range sources {
		err := c.client.Fetch(ctx, addr, transfer.BlobKey(sum), c.blobs)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("could not pull the driver's executable (sha256 %x, %d bytes) from %s: %w", sum, size, strings.Join(sources, ", "), errors.Join(errs...))
}

// exeServer is the driver's server of its executable.
type exeServer struct {
	srv    *transfer.Server
	ln     net.Listener
	cancel context.CancelFunc
	done   chan struct{}
}

func (e *exeServer) close() {
	e.cancel()
	e.ln.Close()
	<-e.done
}

// exeSources returns where a node may pull the driver's executable: up to
// two nodes of the job (their caches hold it: the load of many joins is
// spread), then the driver's own server, started on first use.
func (d *Driver) exeSources() ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errors.New("the driver is closed")
	}
	if d.exe == nil {
		host := d.cfg.Listen
		if host == "" {
			host = "127.0.0.1"
		}
		ln, err := transfer.Listen(net.JoinHostPort(host, "0"), d.cfg.Token)
		if err != nil {
			return nil, fmt.Errorf("serving the executable to the nodes: %w", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		e := &exeServer{srv: transfer.NewServer(transfer.FileBlob(d.cfg.Executable, d.sum)), ln: ln, cancel: cancel, done: make(chan struct{})}
		go func() {
			defer close(e.done)
			_ = e.srv.Serve(ctx, ln)
		}()
		d.exe = e
	}
	var out []string
	for _, k := range slices.Backward(slices.Sorted(maps.Keys(d.leases))) {
		if a := d.leases[k].objAddr; a != "" && len(out) < 2 {
			out = append(out, a)
		}
	}
	return append(out, d.exe.ln.Addr().String()), nil
}

// ExeServed returns the bytes of the executable the driver served.
func (d *Driver) ExeServed() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.exe == nil {
		return 0
	}
	return d.exe.srv.Served()
}
