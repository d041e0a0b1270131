package wire

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The peer process of TestPeerDeathIsReported: the test binary started
// again with these variables set.
const (
	envPeerSocket = "GRAY_WIRE_TEST_PEER_SOCKET"
	envPeerMode   = "GRAY_WIRE_TEST_PEER_MODE" // "echo" or "stall"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(envPeerSocket); path != "" {
		if err := runPeer(path, os.Getenv(envPeerMode)); err != nil {
			fmt.Fprintln(os.Stderr, "peer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runPeer dials path, answers the transport offer and then, in mode
// "echo", sends every frame back; in mode "stall" it reads one frame and
// then nothing, so the other side's ring fills up. It runs until killed.
func runPeer(path, mode string) error {
	c, err := net.Dial("unix", path)
	if err != nil {
		return err
	}
	w := New(c)
	if err := w.Send(1, nil); err != nil { // hello, as a worker's
		return err
	}
	if err := w.Answer(); err != nil {
		return err
	}
	for {
		typ, p, err := w.Recv()
		if err != nil {
			return err
		}
		if mode == "stall" {
			select {}
		}
		if err := w.Send(typ, func(b []byte) []byte { return append(b, p...) }); err != nil {
			return err
		}
	}
}

// A peer process killed in the middle of an exchange is reported on both
// paths: Recv returns an error, and Send reports one soon after, even
// when the frames it queued wait for room the dead peer will never free.
// Each round kills the peer at another point; half the rounds kill one
// that stopped reading with the sender's ring full.
func TestPeerDeathIsReported(t *testing.T) {
	for _, transport := range []string{"socket", "shared"} {
		t.Run(transport, func(t *testing.T) {
			if transport == "shared" {
				if !shmSupported(t) {
					t.Skip("no shared-memory fast path on this platform")
				}
				t.Setenv(EnvShm, "on")
			} else {
				t.Setenv(EnvShm, "off")
			}
			for round := range 8 {
				mode := "echo"
				if round%2 == 1 {
					mode = "stall"
				}
				peerDeathRound(t, transport == "shared", mode, round)
			}
		})
	}
}

func peerDeathRound(t *testing.T, shared bool, mode string, round int) {
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envPeerSocket+"="+path, envPeerMode+"="+mode)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	w := New(c)
	defer w.Abort()
	if typ, _, err := w.Recv(); err != nil || typ != 1 {
		t.Fatalf("round %d: hello: type %d, %v", round, typ, err)
	}
	if err := w.Offer(); err != nil {
		t.Fatal(err)
	}
	if w.Shared() != shared {
		t.Fatalf("round %d: Shared() = %v, want %v", round, w.Shared(), shared)
	}

	// The reader counts echoes and reports how the stream ended.
	echoes := make(chan struct{}, 1024)
	ended := make(chan error, 1)
	go func() {
		for {
			if _, _, err := w.Recv(); err != nil {
				ended <- err
				return
			}
			echoes <- struct{}{}
		}
	}()
	frame := func(b []byte) []byte { return append(b, make([]byte, 4<<10+round*1000)...) }
	killAfter := 1 + 3*round // echoes before the kill
	if mode == "stall" {
		// Fill the ring (64 frames of 4 KiB or more): the peer read one
		// frame and stopped; the rest waits in the background writer.
		for range 64 {
			if err := w.Send(2, frame); err != nil {
				t.Fatalf("round %d: Send before the kill: %v", round, err)
			}
		}
	} else {
		for i := range killAfter {
			if err := w.Send(2, frame); err != nil {
				t.Fatalf("round %d: Send before the kill: %v", round, err)
			}
			select {
			case <-echoes:
			case err := <-ended:
				t.Fatalf("round %d: stream ended after %d echoes: %v", round, i, err)
			case <-time.After(20 * time.Second):
				t.Fatalf("round %d: no echo", round)
			}
		}
		// More frames in flight while it dies.
		for range round % 4 {
			_ = w.Send(2, frame)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}

	watchdog := time.After(20 * time.Second)
	select {
	case err := <-ended:
		if err == nil {
			t.Fatalf("round %d: Recv ended without an error", round)
		}
	case <-watchdog:
		t.Fatalf("round %d (%s): the reader did not see the peer's death", round, mode)
	}
	for {
		err := w.Send(2, frame)
		if err != nil {
			if errors.Is(err, ErrClosed) {
				t.Fatalf("round %d: Send failed with %v, want the peer's end", round, err)
			}
			break
		}
		select {
		case <-watchdog:
			t.Fatalf("round %d (%s): Send kept succeeding after the peer died", round, mode)
		case <-time.After(time.Millisecond):
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- w.Close() }()
	select {
	case <-closed:
	case <-watchdog:
		t.Fatalf("round %d (%s): Close hung after the peer died", round, mode)
	}
}
