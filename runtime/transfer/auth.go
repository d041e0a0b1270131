package transfer

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// ErrUnauthorized is returned (wrapped) by the handshakes, Dial and Fetch
// when the peer does not prove it holds the cluster token: a wrong token, no
// token, or a peer that does not speak the handshake at all.
var ErrUnauthorized = errors.New("transfer: peer does not hold the cluster token")

// DefaultHandshakeTimeout bounds a handshake whose context has no deadline,
// so that a silent peer cannot hold a connection (or Accept) forever.
const DefaultHandshakeTimeout = 5 * time.Second

// The handshake, with T the token, Nc and Ns 32 fresh random bytes each and
// mac(x) = HMAC-SHA256(T, x):
//
//	client -> server  hello = magic || Nc
//	server -> client  Ns || mac("gray-server" || Nc || Ns)
//	client -> server  mac("gray-client" || Nc || Ns)   (zeros if the server's proof was wrong)
//	server -> client  one byte: verdictOK or verdictRefused
//
// Each side proves the token over a transcript that holds a nonce the other
// side chose afresh, so a recorded exchange cannot be replayed, and the two
// proofs are labelled differently, so one side's proof cannot be reflected
// back as the other's. The token itself never crosses the wire. The client
// checks the server's proof before giving its own, so it never hands a proof
// to a server that has not shown the token.
const (
	magic          = "GRAYAUT1"
	nonceLen       = 32
	macLen         = sha256.Size
	verdictOK      = 1
	verdictRefused = 0
	serverLabel    = "gray-server"
	clientLabel    = "gray-client"
)

func proof(token []byte, label string, nc, ns []byte) []byte {
	m := hmac.New(sha256.New, token)
	m.Write([]byte(label))
	m.Write(nc)
	m.Write(ns)
	return m.Sum(nil)
}

// withDeadline applies ctx's deadline (or DefaultHandshakeTimeout) to c and
// makes ctx's cancellation interrupt c's I/O. The returned function undoes
// both and reports ctx's error if it cut the I/O short.
func withDeadline(ctx context.Context, c net.Conn) (done func(err error) error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(DefaultHandshakeTimeout)
	}
	_ = c.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	return func(err error) error {
		if !stop() && ctx.Err() != nil && err != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		_ = c.SetDeadline(time.Time{})
		return err
	}
}

func checkToken(token []byte) error {
	if len(token) == 0 {
		return fmt.Errorf("%w: no token given; pass the cluster token (gray start prints it; GRAY_TOKEN)", ErrUnauthorized)
	}
	return nil
}

// ServerHandshake authenticates the peer of an accepted connection and
// proves the token to it. It returns nil when both sides hold token, an
// error wrapping ErrUnauthorized when the peer's proof is wrong or it does
// not speak the handshake, and another error when the connection fails or
// ctx ends (its deadline, or DefaultHandshakeTimeout without one, bounds the
// handshake). It does not close c.
func ServerHandshake(ctx context.Context, c net.Conn, token []byte) (err error) {
	if err := checkToken(token); err != nil {
		return err
	}
	done := withDeadline(ctx, c)
	defer func() { err = done(err) }()

	hello := make([]byte, len(magic)+nonceLen)
	if _, err := io.ReadFull(c, hello); err != nil {
		return fmt.Errorf("transfer: handshake with %s: reading hello: %w", c.RemoteAddr(), err)
	}
	if string(hello[:len(magic)]) != magic {
		return fmt.Errorf("%w: %s does not speak the Gray handshake (it sent %q)", ErrUnauthorized, c.RemoteAddr(), hello[:len(magic)])
	}
	nc := hello[len(magic):]
	ns := make([]byte, nonceLen)
	if _, err := rand.Read(ns); err != nil {
		return fmt.Errorf("transfer: handshake: random nonce: %w", err)
	}
	if _, err := c.Write(append(ns, proof(token, serverLabel, nc, ns)...)); err != nil {
		return fmt.Errorf("transfer: handshake with %s: %w", c.RemoteAddr(), err)
	}
	got := make([]byte, macLen)
	if _, err := io.ReadFull(c, got); err != nil {
		return fmt.Errorf("transfer: handshake with %s: reading its proof: %w", c.RemoteAddr(), err)
	}
	if !hmac.Equal(got, proof(token, clientLabel, nc, ns)) {
		_, _ = c.Write([]byte{verdictRefused})
		return fmt.Errorf("%w: %s gave a wrong proof (a different cluster token?)", ErrUnauthorized, c.RemoteAddr())
	}
	if _, err := c.Write([]byte{verdictOK}); err != nil {
		return fmt.Errorf("transfer: handshake with %s: %w", c.RemoteAddr(), err)
	}
	return nil
}

// ClientHandshake authenticates the server at the other end of a dialled
// connection and proves the token to it. Errors are as for ServerHandshake;
// a server that refuses this side's proof is also ErrUnauthorized. It does
// not close c.
func ClientHandshake(ctx context.Context, c net.Conn, token []byte) (err error) {
	if err := checkToken(token); err != nil {
		return err
	}
	done := withDeadline(ctx, c)
	defer func() { err = done(err) }()

	hello := make([]byte, len(magic)+nonceLen)
	copy(hello, magic)
	nc := hello[len(magic):]
	if _, err := rand.Read(nc); err != nil {
		return fmt.Errorf("transfer: handshake: random nonce: %w", err)
	}
	if _, err := c.Write(hello); err != nil {
		return fmt.Errorf("transfer: handshake with %s: %w", c.RemoteAddr(), err)
	}
	resp := make([]byte, nonceLen+macLen)
	if _, err := io.ReadFull(c, resp); err != nil {
		return fmt.Errorf("transfer: handshake with %s: reading its proof: %w (is it a Gray node of this cluster?)", c.RemoteAddr(), err)
	}
	ns, got := resp[:nonceLen], resp[nonceLen:]
	if !hmac.Equal(got, proof(token, serverLabel, nc, ns)) {
		_, _ = c.Write(make([]byte, macLen)) // a proof that fails, so the server knows too
		return fmt.Errorf("%w: %s gave a wrong proof (a different cluster token?)", ErrUnauthorized, c.RemoteAddr())
	}
	if _, err := c.Write(proof(token, clientLabel, nc, ns)); err != nil {
		return fmt.Errorf("transfer: handshake with %s: %w", c.RemoteAddr(), err)
	}
	var verdict [1]byte
	if _, err := io.ReadFull(c, verdict[:]); err != nil {
		return fmt.Errorf("transfer: handshake with %s: reading its verdict: %w", c.RemoteAddr(), err)
	}
	if verdict[0] != verdictOK {
		return fmt.Errorf("%w: %s refused this side's proof", ErrUnauthorized, c.RemoteAddr())
	}
	return nil
}

// Dial connects to addr over TCP and runs ClientHandshake. ctx bounds both
// (without a deadline, the connect and the handshake get
// DefaultHandshakeTimeout each). The connection is closed on any error.
func Dial(ctx context.Context, addr string, token []byte) (net.Conn, error) {
	if err := checkToken(token); err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: DefaultHandshakeTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("transfer: dialling %s: %w", addr, err)
	}
	if err := ClientHandshake(ctx, c, token); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}
