package transfer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"sync"
	"time"
)

// Client fetches objects from Servers. It keeps authenticated connections
// per address for reuse (one connection carries one fetch at a time; fetches
// from one address in parallel use parallel connections) and merges
// concurrent fetches of one key into one sink. It is safe for concurrent
// use.
type Client struct {
	token []byte
	// MaxIdle is how many idle connections are kept per address; default 8.
	// Set it before the first Fetch.
	MaxIdle int
	// IOTimeout bounds each chunk read: a server that sends nothing for this
	// long fails the fetch. Default DefaultIOTimeout. Set it before the
	// first Fetch.
	IOTimeout time.Duration
	// Streams is how many connections one large object is fetched over in
	// parallel (ranges of at least MinStreamBytes each); default
	// DefaultStreams. Set it before the first Fetch.
	Streams int

	ctx    context.Context // cancelled by Close: ends every transfer
	cancel context.CancelFunc
	wg     sync.WaitGroup // transfer goroutines

	mu     sync.Mutex
	closed bool
	idle   map[string][]net.Conn
	calls  map[Key][]*call // transfers in flight, by key
}

// call is one transfer, shared by the Fetches of one key into one sink.
type call struct {
	key     Key
	dst     Sink
	waiters int // Fetches still waiting; at 0 the transfer is cancelled
	cancel  context.CancelFunc
	done    chan struct{}
	err     error // set before done is closed
}

// NewClient returns a client that authenticates with token.
func NewClient(token []byte) *Client {
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{
		token:  append([]byte(nil), token...),
		ctx:    ctx,
		cancel: cancel,
		idle:   map[string][]net.Conn{},
		calls:  map[Key][]*call{},
	}
}

// ErrClientClosed is returned by Fetch after Close.
var ErrClientClosed = errors.New("transfer: client closed")

// Fetch pulls k from the server at addr into dst: Create, then the bytes
// straight into the room Create gave, then Commit; on any failure dst's
// object is aborted. A missing object is an error wrapping ErrNotFound; a
// server that refuses the token, ErrUnauthorized.
//
// Concurrent Fetches of the same key into the same sink (compared with ==)
// share one transfer, from the first caller's address, and all get its
// result; the transfer stops only when every caller's ctx has ended. When
// ctx ends first, Fetch returns ctx's error at once.
func (c *Client) Fetch(ctx context.Context, addr string, k Key, dst Sink) error {
	if len(k) == 0 || len(k) > MaxKeyLen {
		return fmt.Errorf("transfer: fetching %q: a key must be 1 to %d bytes", k, MaxKeyLen)
	}
	if dst == nil {
		return fmt.Errorf("transfer: fetching %s: nil sink", k)
	}
	cl, err := c.join(addr, k, dst)
	if err != nil {
		return err
	}
	select {
	case <-cl.done:
		return cl.err
	case <-ctx.Done():
		c.mu.Lock()
		cl.waiters--
		if cl.waiters == 0 {
			cl.cancel()
		}
		c.mu.Unlock()
		return fmt.Errorf("transfer: fetching %s from %s: %w", k, addr, ctx.Err())
	}
}

// join returns the transfer of k into dst in flight, or starts one.
func (c *Client) join(addr string, k Key, dst Sink) (*call, error) {
	shareable := reflect.TypeOf(dst).Comparable()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClientClosed
	}
	var prev *call // a transfer of k into dst that all its callers gave up
	if shareable {
		for _, cl := range c.calls[k] {
			if reflect.TypeOf(cl.dst).Comparable() && cl.dst == dst {
				if cl.waiters > 0 {
					cl.waiters++
					return cl, nil
				}
				prev = cl
			}
		}
	}
	ctx, cancel := context.WithCancel(c.ctx)
	cl := &call{key: k, dst: dst, waiters: 1, cancel: cancel, done: make(chan struct{})}
	c.calls[k] = append(c.calls[k], cl)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if prev != nil {
			<-prev.done // let it abort its object in dst first
		}
		err := c.transfer(ctx, addr, k, dst)
		cancel()
		c.mu.Lock()
		list := c.calls[k]
		for i, x := range list {
			if x == cl {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(c.calls, k)
		} else {
			c.calls[k] = list
		}
		cl.err = err
		c.mu.Unlock()
		close(cl.done)
	}()
	return cl, nil
}

// conn returns an idle connection to addr, or dials one.
func (c *Client) conn(ctx context.Context, addr string) (conn net.Conn, pooled bool, err error) {
	c.mu.Lock()
	if list := c.idle[addr]; len(list) > 0 {
		conn = list[len(list)-1]
		c.idle[addr] = list[:len(list)-1]
		c.mu.Unlock()
		return conn, true, nil
	}
	c.mu.Unlock()
	conn, err = Dial(ctx, addr, c.token)
	if err != nil {
		return nil, false, err
	}
	return conn, false, nil
}

// putIdle keeps conn for reuse, or closes it.
func (c *Client) putIdle(addr string, conn net.Conn) {
	maxIdle := c.MaxIdle
	if maxIdle <= 0 {
		maxIdle = 8
	}
	c.mu.Lock()
	if !c.closed && len(c.idle[addr]) < maxIdle {
		c.idle[addr] = append(c.idle[addr], conn)
		conn = nil
	}
	c.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
}

// Close ends the transfers in flight (their Fetches fail) and closes the
// idle connections.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	idle := c.idle
	c.idle = map[string][]net.Conn{}
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	for _, list := range idle {
		for _, conn := range list {
			_ = conn.Close()
		}
	}
	return nil
}

func human(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
