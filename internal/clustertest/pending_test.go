package clustertest

import (
	"net"
	"testing"
	"time"
)

func TestProcAddr(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		port int
		want string
	}{
		{"127.0.0.1", 8080, "0100007F:1F90"},
		{"10.1.2.3", 6379, "0302010A:18EB"},
		{"::1", 80, "00000000000000000000000001000000:0050"},
	} {
		if got := procAddr(net.ParseIP(tc.ip), tc.port); got != tc.want {
			t.Errorf("procAddr(%s, %d) = %s, want %s", tc.ip, tc.port, got, tc.want)
		}
	}
}

// A connection the server has not accepted, then bytes it has not read,
// are what pendingTo counts; nothing is counted once the server has read
// them.
func TestPendingTo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	count := func() int {
		t.Helper()
		n, err := pendingTo(addr)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 0 {
		t.Fatalf("an idle server: %d pending, want 0", n)
	}
	cl, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	WaitFor(t, 10*time.Second, "a connection in the accept queue", func() bool { return count() == 1 })
	sv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	if _, err := cl.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, 10*time.Second, "3 unread bytes", func() bool { return count() == 3 })
	if _, err := sv.Read(make([]byte, 3)); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Fatalf("after the server read: %d pending, want 0", n)
	}
}
