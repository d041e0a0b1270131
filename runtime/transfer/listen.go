package transfer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// ListenConfig configures an authenticating listener. The zero value is
// ready to use.
type ListenConfig struct {
	// HandshakeTimeout bounds each incoming handshake; default
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// MaxPending bounds the connections in handshake or authenticated and
	// waiting for Accept; further ones wait in the kernel's backlog.
	// Default 64.
	MaxPending int
	// OnReject, if set, is called (from a handshake's goroutine) with each
	// connection that failed its handshake and why, after it was closed.
	OnReject func(remote net.Addr, err error)
}

// Listen listens on the TCP address addr. Its Accept returns only
// connections whose peer proved it holds token (see ServerHandshake).
func Listen(addr string, token []byte) (net.Listener, error) {
	return ListenConfig{}.Listen(addr, token)
}

// Listen listens on the TCP address addr with lc's settings. Handshakes run
// concurrently, each bounded by the handshake timeout, so a slow or silent
// client delays nobody else; connections that fail theirs are closed. Close
// stops accepting and closes the connections not yet returned by Accept.
func (lc ListenConfig) Listen(addr string, token []byte) (net.Listener, error) {
	if err := checkToken(token); err != nil {
		return nil, err
	}
	inner, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("transfer: listening on %s: %w", addr, err)
	}
	if lc.HandshakeTimeout <= 0 {
		lc.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if lc.MaxPending <= 0 {
		lc.MaxPending = 64
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{
		inner:  inner,
		cfg:    lc,
		token:  append([]byte(nil), token...),
		ctx:    ctx,
		cancel: cancel,
		conns:  make(chan net.Conn),
		sem:    make(chan struct{}, lc.MaxPending),
	}
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

type listener struct {
	inner  net.Listener
	cfg    ListenConfig
	token  []byte
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	conns  chan net.Conn // authenticated, waiting for Accept
	sem    chan struct{} // one slot per handshake in progress
	wg     sync.WaitGroup

	mu  sync.Mutex
	err error // why acceptLoop stopped
}

var errClosed = fmt.Errorf("transfer: listener closed: %w", net.ErrClosed)

// acceptLoop accepts raw connections and starts a handshake for each. It
// ends when the inner listener fails for good (Close closes it).
func (l *listener) acceptLoop() {
	defer l.wg.Done()
	defer l.cancel()
	var backoff time.Duration
	for {
		select {
		case l.sem <- struct{}{}:
		case <-l.ctx.Done():
			return
		}
		c, err := l.inner.Accept()
		if err != nil {
			<-l.sem
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() { // transient (e.g. too many open files)
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				select {
				case <-time.After(backoff):
					continue
				case <-l.ctx.Done():
					return
				}
			}
			l.mu.Lock()
			if l.err == nil {
				l.err = fmt.Errorf("transfer: accepting on %s: %w", l.inner.Addr(), err)
			}
			l.mu.Unlock()
			return
		}
		backoff = 0
		l.wg.Add(1)
		go l.handshake(c)
	}
}

// handshake authenticates c and hands it to Accept. It holds its slot of
// sem until then, so that connections nobody accepts stay bounded.
func (l *listener) handshake(c net.Conn) {
	defer l.wg.Done()
	defer func() { <-l.sem }()
	ctx, cancel := context.WithTimeout(l.ctx, l.cfg.HandshakeTimeout)
	err := ServerHandshake(ctx, c, l.token)
	cancel()
	if err != nil {
		_ = c.Close()
		if l.cfg.OnReject != nil {
			l.cfg.OnReject(c.RemoteAddr(), err)
		}
		return
	}
	select {
	case l.conns <- c:
	case <-l.ctx.Done():
		_ = c.Close()
	}
}

// Accept waits for and returns the next authenticated connection.
func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.ctx.Done():
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.err != nil {
			return nil, l.err
		}
		return nil, errClosed
	}
}

// Close stops listening, ends the handshakes in progress and waits for
// their goroutines.
func (l *listener) Close() error {
	l.mu.Lock()
	if l.err == nil {
		l.err = errClosed
	}
	l.mu.Unlock()
	l.cancel()
	err := l.inner.Close()
	l.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// Addr returns the listener's address.
func (l *listener) Addr() net.Addr { return l.inner.Addr() }
