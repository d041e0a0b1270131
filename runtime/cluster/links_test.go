package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestTimedOut: only a peer that refuses or resets is a sign of death; a
// dial or handshake that runs out of time (a stopped or loaded node) is
// not, so a slow node is judged by the node timeout alone.
func TestTimedOut(t *testing.T) {
	// A real dial timeout: a listener whose backlog is never accepted
	// still completes TCP, so dial a handshake-reading deadline instead.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
	_, readErr := c.Read(make([]byte, 1))

	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"a read past its deadline", fmt.Errorf("transfer: handshake: %w", readErr), true},
		{"a context that ran out", fmt.Errorf("transfer: dialling: %w", context.DeadlineExceeded), true},
		{"refused", fmt.Errorf("transfer: dialling: %w", syscall.ECONNREFUSED), false},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), false},
		{"the connection ended", io.EOF, false},
		{"a wrong token", errors.New("wrong proof"), false},
		{"held, then lost", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := timedOut(tc.err); got != tc.want {
				t.Fatalf("timedOut(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
