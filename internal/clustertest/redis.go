// Package clustertest runs real Gray clusters for tests: redis-server
// alone (StartRedis) or whole multi-node clusters on loopback (Start),
// each node a separate process started by the `gray` binary, and checks
// that nothing is left running afterwards. Should a test binary die
// before its cleanup (a timeout), its nodes notice within a second that
// their owner is gone (GRAY_OWNER_PID) and stop by themselves.
package clustertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/control"
)

// Redis is a redis-server run for one test.
type Redis struct {
	*control.RedisServer
	Config control.ServerConfig // to start it again on the same directory
	Token  string
}

// StartRedis runs a real redis-server on a free port of 127.0.0.1 with a
// random password, stopped when the test ends. The test is skipped when
// redis-server is not installed.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (Debian package redis-server; `make deps` installs it)")
	}
	cfg := control.ServerConfig{Port: FreePort(t, "127.0.0.1"), Dir: t.TempDir(), Password: NewToken(t)}
	r := &Redis{Config: cfg, Token: cfg.Password}
	r.Restart(t)
	return r
}

// Restart starts the server again (after Kill or Stop) on the same port
// and directory, so it reloads its append-only file.
func (r *Redis) Restart(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := control.StartRedisServer(ctx, r.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	r.RedisServer = s
}

// Dial connects a control store to the server for job.
func (r *Redis) Dial(t testing.TB, job string) *control.Redis {
	t.Helper()
	c, err := control.DialRedis(context.Background(), control.RedisConfig{Addr: r.Addr(), Password: r.Token}, job)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// FreePort returns a TCP port of ip that was free a moment ago.
func FreePort(t testing.TB, ip string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("finding a free port on %s: %v", ip, err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// NewToken returns a random cluster token (32 bytes, hex).
func NewToken(t testing.TB) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
